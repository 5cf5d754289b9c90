package ec2sim

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"slices"
)

// Interface types, as EC2 renders them in interfaceType.
const (
	TypeInterface = "interface"
	TypeTrunk     = "trunk"    // security groups for pods: the VPC resource controller's
	TypeEFA       = "efa"      // EFA with an IP stack
	TypeEFAOnly   = "efa-only" // EFA without IPv4
	TypeBranch    = "branch"   // a pod's ENI behind a trunk: never attached, never in IMDS
)

// creatableTypes are CreateNetworkInterface's InterfaceType values (the
// SDK's NetworkInterfaceCreationType); omitted means "interface".
var creatableTypes = []string{TypeEFA, TypeEFAOnly, TypeBranch, TypeTrunk}

// readInterfaceType checks CreateNetworkInterface's InterfaceType; an
// efa-only ENI takes no IPv4 address.
func readInterfaceType(raw string, primary netip.Addr, r addrRequest) (string, *apiError) {
	if raw == "" {
		return TypeInterface, nil
	}
	if !slices.Contains(creatableTypes, raw) {
		return "", errInvalidParameterValue("Invalid value '%s' for interfaceType. Valid values: efa, efa-only, branch, trunk", raw)
	}
	if raw == TypeEFAOnly && (primary.IsValid() || r.slots() > 0) {
		return "", newAPIError("InvalidParameterCombination", "EFA-only network interfaces cannot have IPv4 addresses.")
	}
	return raw, nil
}

// ENISpec is an ENI another party makes on the node (the VPC resource
// controller's trunk, an EFA launch template, a user's storage network),
// outside vpc-cni's EC2 client: no call counter moves and no fault applies.
type ENISpec struct {
	Type         string            `json:"type,omitempty"`     // TypeInterface (default), trunk, efa, efa-only, branch
	SubnetID     string            `json:"subnetId,omitempty"` // default: the node's subnet
	Description  string            `json:"description,omitempty"`
	Tags         map[string]string `json:"tags,omitempty"`
	Groups       []string          `json:"groups,omitempty"`       // default: the VPC's default group
	Secondary    int               `json:"secondary,omitempty"`    // secondary addresses, the lowest free
	SecondaryIPs []netip.Addr      `json:"secondaryIps,omitempty"` // or these
	Prefixes     int               `json:"prefixes,omitempty"`     // /28 prefixes
	Card         int               `json:"card,omitempty"`         // network card index
	Device       *int              `json:"device,omitempty"`       // nil: the card's lowest free device index
	Detached     bool              `json:"detached,omitempty"`     // create only (a branch ENI: not associated)
}

// AddENI creates the ENI and, unless spec.Detached, attaches it to the node
// (a branch ENI is marked in-use instead: associated with a trunk, it has no
// attachment), with EC2's rules and errors. Its link and IMDS entry follow
// as for any attach, Faults.LinkDelay included.
func (s *Sim) AddENI(spec ENISpec) (ENI, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, aerr := s.buildSpecENI(spec)
	if aerr != nil {
		return ENI{}, fmt.Errorf("ec2sim: AddENI: %s: %s", aerr.Code, aerr.Message)
	}
	s.enis[e.id] = e
	switch {
	case spec.Detached:
	case e.ifType == TypeBranch:
		e.branchInUse = true
	default:
		device := s.freeDevice(spec.Card)
		if spec.Device != nil {
			device = *spec.Device
		}
		if _, aerr := s.attach(e, device, spec.Card); aerr != nil {
			s.dropENI(e)
			return ENI{}, fmt.Errorf("ec2sim: AddENI: %s: %s", aerr.Code, aerr.Message)
		}
	}
	return s.eniState(e), nil
}

func (s *Sim) buildSpecENI(spec ENISpec) (*eniRec, *apiError) {
	subnet := cmp.Or(spec.SubnetID, s.subnetID)
	if s.poolOf(subnet) == nil {
		return nil, newAPIError("InvalidSubnetID.NotFound", "The subnet ID '%s' does not exist", subnet)
	}
	ifType := cmp.Or(spec.Type, TypeInterface)
	r := addrRequest{count: spec.Secondary, ips: spec.SecondaryIPs, prefixCount: spec.Prefixes}
	raw := ifType
	if raw == TypeInterface {
		raw = "" // the API's default
	}
	if _, err := readInterfaceType(raw, netip.Addr{}, r); err != nil {
		return nil, err
	}
	var tags []tagParam
	for _, k := range slices.Sorted(maps.Keys(spec.Tags)) {
		tags = append(tags, tagParam{key: k, value: spec.Tags[k], hasValue: true})
	}
	if err := checkTags(tags, nil); err != nil {
		return nil, err
	}
	if err := checkCreateCombination(netip.Addr{}, r); err != nil {
		return nil, err
	}
	groups := slices.Clone(spec.Groups)
	if len(groups) == 0 {
		groups = []string{s.sgID}
	}
	e, err := s.buildENI(subnet, spec.Description, groups, ifType, netip.Addr{}, r)
	if err != nil {
		return nil, err
	}
	maps.Copy(e.tags, spec.Tags)
	return e, nil
}

// freeDevice is the lowest device index free on the card.
func (s *Sim) freeDevice(card int) int {
	used := map[int]bool{}
	for _, e := range s.attachedENIs() {
		if e.attach.cardIndex == card {
			used[e.attach.deviceIndex] = true
		}
	}
	d := 0
	for used[d] {
		d++
	}
	return d
}

// dropENI forgets a detached ENI and gives its addresses back to the subnet.
func (s *Sim) dropENI(e *eniRec) {
	sub := s.poolOf(e.subnetID)
	if e.primary.IsValid() {
		sub.release(e.primary)
	}
	for a := range e.secondary {
		sub.release(a)
	}
	for p := range e.prefixes {
		sub.releasePrefix(p)
	}
	s.dropENIIPv6(e)
	delete(s.enis, e.id)
}

// serveAddENI is POST /_sim/enis: an ENISpec in, the ENI (as State shows it) out.
func (s *Sim) serveAddENI(w http.ResponseWriter, r *http.Request) {
	var spec ENISpec
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		http.Error(w, "bad JSON: "+err.Error(), http.StatusBadRequest)
		return
	}
	e, err := s.AddENI(spec)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	writeJSON(w, e)
}
