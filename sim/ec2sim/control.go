package ec2sim

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"
)

// State is a deep copy of the emulator's view of the node.
type State struct {
	InstanceID, InstanceType, SubnetID, VPCID string
	AZ                                        string // the node's availability zone
	SubnetFree                                int
	ENIs                                      []ENI // creation order; the primary ENI first
}

// ENI is one network interface as State reports it.
type ENI struct {
	ID, MAC, Status, AttachmentID, SubnetID, Description string // Status "available" | "in-use"
	InterfaceType                                        string // TypeInterface, TypeTrunk, ...
	DeviceIndex                                          int    // -1 when not attached
	NetworkCard                                          int    // the attachment's card (0 when not attached)
	Linked                                               bool   // attached and its link made (see Faults.LinkDelay)
	DeleteOnTermination                                  bool
	PrimaryIP                                            netip.Addr     // invalid for efa-only
	Secondary                                            []netip.Addr   // ascending
	Prefixes                                             []netip.Prefix // ascending
	Tags                                                 map[string]string
	Groups                                               []string // security group IDs
	CreatedAt                                            time.Time
	IPv6s                                                []netip.Addr   // ascending; /128s only
	IPv6Prefixes                                         []netip.Prefix // ascending /80s
}

// State returns a deep copy of the node's ENIs and the subnet's free count.
func (s *Sim) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := State{InstanceID: s.cfg.InstanceID, InstanceType: s.cfg.InstanceType, SubnetID: s.subnetID,
		VPCID: s.vpcID, AZ: s.cfg.AZ, SubnetFree: s.subnet.free}
	for _, e := range s.enisInOrder() {
		st.ENIs = append(st.ENIs, s.eniState(e))
	}
	return st
}

// eniState copies one record; the caller holds s.mu.
func (s *Sim) eniState(e *eniRec) ENI {
	out := ENI{ID: e.id, MAC: e.mac, Status: e.status(), SubnetID: e.subnetID, Description: e.description,
		InterfaceType: e.ifType, DeviceIndex: e.deviceIndex(), PrimaryIP: e.primary, Secondary: e.secondaryList(),
		Prefixes: e.prefixList(), Tags: copyTags(e.tags), Groups: slices.Clone(e.groups), CreatedAt: e.createdAt}
	if a := e.attach; a != nil {
		out.AttachmentID, out.DeleteOnTermination = a.id, a.deleteOnTermination
		out.NetworkCard, out.Linked = a.cardIndex, a.linked
	}
	out.IPv6s, out.IPv6Prefixes = s.eniIPv6Lists(e.id)
	return out
}

// Counters returns the calls per EC2 action (failed and throttled ones
// included), "IMDS" (every IMDS request) and "IMDS:token" (token PUTs).
func (s *Sim) Counters() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.counters)
}

// DryRuns returns, per EC2 action, the DryRun=true requests that were
// authorized (and so changed nothing); Counters counts them too, so a test
// sees that every call of an action was a dry run.
func (s *Sim) DryRuns() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.dryRuns)
}

// ResetCounters zeroes every counter.
func (s *Sim) ResetCounters() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.counters)
	clear(s.dryRuns)
	clear(s.eniCalls)
}

// Faults travel as JSON with durations as strings ("200ms"); numbers are
// taken as nanoseconds.
type faultsJSON struct {
	ThrottleRate    float64      `json:"throttleRate"`
	ServerErrorRate float64      `json:"serverErrorRate"`
	Latency         jsonDuration `json:"latency"`
	IMDSLag         jsonDuration `json:"imdsLag"`
	LinkDelay       jsonDuration `json:"linkDelay"`
	Seed            int64        `json:"seed"`
}

type jsonDuration time.Duration

func (d jsonDuration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *jsonDuration) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch x := v.(type) {
	case string:
		parsed, err := time.ParseDuration(x)
		*d = jsonDuration(parsed)
		return err
	case float64:
		*d = jsonDuration(x)
		return nil
	}
	return fmt.Errorf("duration: want a string like \"200ms\", got %s", b)
}

// MarshalJSON writes durations as strings.
func (f Faults) MarshalJSON() ([]byte, error) {
	return json.Marshal(faultsJSON{ThrottleRate: f.ThrottleRate, ServerErrorRate: f.ServerErrorRate,
		Latency: jsonDuration(f.Latency), IMDSLag: jsonDuration(f.IMDSLag), LinkDelay: jsonDuration(f.LinkDelay), Seed: f.Seed})
}

// UnmarshalJSON reads durations as strings ("200ms") or nanoseconds.
func (f *Faults) UnmarshalJSON(b []byte) error {
	var j faultsJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*f = Faults{ThrottleRate: j.ThrottleRate, ServerErrorRate: j.ServerErrorRate, Latency: time.Duration(j.Latency),
		IMDSLag: time.Duration(j.IMDSLag), LinkDelay: time.Duration(j.LinkDelay), Seed: j.Seed}
	return nil
}

// serveControl is the JSON control API under /_sim/ for other processes.
func (s *Sim) serveControl(w http.ResponseWriter, r *http.Request) {
	route := r.Method + " " + r.URL.Path
	switch route {
	case "GET /_sim/state":
		writeJSON(w, s.State())
	case "GET /_sim/counters":
		writeJSON(w, s.Counters())
	case "GET /_sim/dry-runs":
		writeJSON(w, s.DryRuns())
	case "GET /_sim/faults":
		writeJSON(w, s.CurrentFaults())
	case "POST /_sim/reset-counters":
		s.ResetCounters()
		writeJSON(w, map[string]bool{"ok": true})
	case "POST /_sim/fragment":
		s.FragmentSubnet()
		writeJSON(w, map[string]bool{"ok": true})
	case "POST /_sim/enis":
		s.serveAddENI(w, r)
	default:
		s.serveControlPost(w, r, route)
	}
}

func (s *Sim) serveControlPost(w http.ResponseWriter, r *http.Request, route string) {
	var body struct {
		Action string `json:"action"`
		Code   string `json:"code"`
		Times  int    `json:"times"`
		Free   *int   `json:"free"`
	}
	var faults Faults
	target := any(&body)
	if route == "POST /_sim/faults" {
		target = &faults
	}
	if r.Method != http.MethodPost || !knownPost(route) {
		http.Error(w, "unknown control route "+route, http.StatusNotFound)
		return
	}
	if err := json.NewDecoder(r.Body).Decode(target); err != nil {
		http.Error(w, "bad JSON: "+err.Error(), http.StatusBadRequest)
		return
	}
	if err := s.applyControl(route, body.Action, body.Code, body.Times, body.Free, faults); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	writeJSON(w, map[string]bool{"ok": true})
}

func knownPost(route string) bool {
	switch route {
	case "POST /_sim/faults", "POST /_sim/fail-next", "POST /_sim/subnet-free", "POST /_sim/deny", "POST /_sim/allow":
		return true
	}
	return false
}

func (s *Sim) applyControl(route, action, code string, times int, free *int, faults Faults) error {
	switch route {
	case "POST /_sim/faults":
		s.SetFaults(faults)
	case "POST /_sim/fail-next":
		if action == "" || code == "" {
			return fmt.Errorf("fail-next needs action and code")
		}
		s.FailNext(action, code, times)
	case "POST /_sim/subnet-free":
		if free == nil {
			return fmt.Errorf("subnet-free needs free")
		}
		s.SetSubnetFree(*free)
	case "POST /_sim/deny", "POST /_sim/allow":
		if action == "" {
			return fmt.Errorf("%s needs action", route)
		}
		if route == "POST /_sim/deny" {
			s.DenyAction(action)
		} else {
			s.AllowAction(action)
		}
	}
	return nil
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// AssociateVPCCIDR adds a secondary IPv4 CIDR to the VPC, as
// AssociateVpcCidrBlock does; IMDS lists it in vpc-ipv4-cidr-blocks.
func (s *Sim) AssociateVPCCIDR(p netip.Prefix) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.vpcExtra = append(s.vpcExtra, p.Masked())
}

// vpcCIDRs are the VPC's CIDRs, the primary first. The caller holds s.mu.
func (s *Sim) vpcCIDRs() []string {
	out := []string{s.cfg.VPCCIDR.Masked().String()}
	for _, p := range s.vpcExtra {
		out = append(out, p.String())
	}
	return out
}

// poolOf is the subnet with this ID, or nil.
func (s *Sim) poolOf(id string) *subnetPool {
	for _, sub := range s.subnets {
		if sub.id == id {
			return sub
		}
	}
	return nil
}

// AddSubnet adds a subnet to the VPC, in az ("" is the node's zone), with
// tags (kubernetes.io/role/cni=1 makes it one that subnet discovery may
// use); it returns its ID. The CIDR must lie in one of the VPC's CIDRs and
// overlap no other subnet.
func (s *Sim) AddSubnet(cidr netip.Prefix, az string, tags map[string]string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cidr = cidr.Masked()
	inVPC := false
	for _, v := range s.vpcCIDRs() {
		vp := netip.MustParsePrefix(v)
		inVPC = inVPC || vp.Contains(cidr.Addr()) && cidr.Bits() >= vp.Bits()
	}
	if !inVPC {
		return "", fmt.Errorf("ec2sim: subnet %s is in none of the VPC's CIDRs %v", cidr, s.vpcCIDRs())
	}
	for _, sub := range s.subnets {
		if sub.cidr.Overlaps(cidr) {
			return "", fmt.Errorf("ec2sim: subnet %s overlaps %s (%s)", cidr, sub.cidr, sub.id)
		}
	}
	pool, err := newSubnetPool(cidr)
	if err != nil {
		return "", fmt.Errorf("ec2sim: %w", err)
	}
	pool.id, pool.az = "subnet-0"+s.ids.hex16(), cmp.Or(az, s.cfg.AZ)
	s.subnets = append(s.subnets, pool)
	s.resTags[pool.id] = maps.Clone(tags)
	return pool.id, nil
}

// SubnetFreeOf is the free address count of a subnet (-1: no such subnet).
func (s *Sim) SubnetFreeOf(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sub := s.poolOf(id); sub != nil {
		return sub.free
	}
	return -1
}

// FetchCounters asks a running emulator at url how many calls of each
// action (and IMDS) it served.
func FetchCounters(url string) (map[string]int, error) {
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(strings.TrimRight(url, "/") + "/_sim/counters")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered %s", url, resp.Status)
	}
	counts := map[string]int{}
	if err := json.Unmarshal(body, &counts); err != nil {
		return nil, fmt.Errorf("reading the counters: %w", err)
	}
	return counts, nil
}
