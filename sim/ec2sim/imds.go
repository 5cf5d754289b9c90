package ec2sim

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"time"
)

const (
	imdsTTLHeader   = "X-Aws-Ec2-Metadata-Token-Ttl-Seconds"
	imdsTokenHeader = "X-Aws-Ec2-Metadata-Token"
	imdsRole        = "ec2sim-node-role"
)

// serveIMDS is IMDSv2 only: PUT /latest/api/token, then GETs with the token.
func (s *Sim) serveIMDS(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counters["IMDS"]++
	if r.URL.Path == "/latest/api/token" {
		s.counters["IMDS:token"]++
		s.issueToken(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	if exp, ok := s.imdsTokens[r.Header.Get(imdsTokenHeader)]; !ok || s.now().After(exp) {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	body, contentType, ok := s.imdsGet(r.URL.Path)
	if !ok {
		imdsNotFound(w)
		return
	}
	w.Header().Set("Content-Type", contentType)
	_, _ = w.Write([]byte(body))
}

func (s *Sim) issueToken(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPut {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	if r.Header.Get("X-Forwarded-For") != "" {
		w.WriteHeader(http.StatusForbidden)
		return
	}
	ttl, err := strconv.Atoi(r.Header.Get(imdsTTLHeader))
	if err != nil || ttl < 1 || ttl > 21600 {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	now := s.now()
	for tok, exp := range s.imdsTokens {
		if now.After(exp) {
			delete(s.imdsTokens, tok)
		}
	}
	raw := make([]byte, 24)
	_, _ = rand.Read(raw)
	token := hex.EncodeToString(raw)
	s.imdsTokens[token] = now.Add(time.Duration(ttl) * time.Second)
	w.Header().Set(imdsTTLHeader, strconv.Itoa(ttl))
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write([]byte(token))
}

func imdsNotFound(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/html")
	w.WriteHeader(http.StatusNotFound)
	_, _ = w.Write([]byte("<?xml version=\"1.0\" encoding=\"iso-8859-1\"?>\n<html><head><title>404 - Not Found</title></head>" +
		"<body><h1>404 - Not Found</h1></body></html>\n"))
}

func (s *Sim) imdsGet(urlPath string) (body, contentType string, ok bool) {
	if urlPath == "/latest/dynamic/instance-identity/document" {
		return s.identityDocument(), "application/json", true
	}
	p, found := strings.CutPrefix(urlPath, "/latest/meta-data")
	if !found {
		return "", "", false
	}
	p = strings.Trim(p, "/")
	body, ok = lookupTree(s.leavesFor(p), p)
	return body, "text/plain", ok
}

// leavesFor is the part of the metadata tree a path can reach: one
// interface's leaves for a path under its MAC (a node reads some 70 such
// paths a pass, and building every ENI's address lists for each would make
// the emulator, not the client, what a steady-state benchmark measures).
func (s *Sim) leavesFor(p string) map[string]string {
	rest, ok := strings.CutPrefix(p, "network/interfaces/macs/")
	mac, _, _ := strings.Cut(rest, "/")
	if !ok || mac == "" {
		return s.metadataLeaves()
	}
	leaves := map[string]string{}
	now := s.now()
	for _, e := range s.attachedENIs() {
		if e.mac == mac && s.listed(e, now) {
			s.addENILeaves(leaves, e, now)
		}
	}
	return leaves
}

// lookupTree serves a leaf's value, or a directory's listing (children with
// a trailing "/" when they are directories). "foo/" and "foo" are the same.
func lookupTree(leaves map[string]string, p string) (string, bool) {
	if v, ok := leaves[p]; ok {
		return v, true
	}
	prefix := p + "/"
	if p == "" {
		prefix = ""
	}
	children := map[string]bool{}
	for k := range leaves {
		rest, ok := strings.CutPrefix(k, prefix)
		if !ok {
			continue
		}
		name, _, isDir := strings.Cut(rest, "/")
		if isDir {
			name += "/"
		}
		children[name] = true
	}
	if len(children) == 0 {
		return "", false
	}
	names := make([]string, 0, len(children))
	for n := range children {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, "\n"), true
}

func (s *Sim) metadataLeaves() map[string]string {
	primary := s.primaryENI()
	leaves := map[string]string{
		"ami-id":                      s.imageID,
		"instance-id":                 s.cfg.InstanceID,
		"instance-type":               s.cfg.InstanceType,
		"local-ipv4":                  primary.primary.String(),
		"local-hostname":              s.dnsName(primary.primary),
		"hostname":                    s.dnsName(primary.primary),
		"mac":                         primary.mac,
		"placement/region":            s.cfg.Region,
		"placement/availability-zone": s.cfg.AZ,
		"security-groups":             "node",
	}
	if !s.noRole {
		leaves["iam/info"], leaves["iam/security-credentials/"+imdsRole] = s.iamInfo(), s.roleCredentials()
	}
	now := s.now()
	for _, e := range s.attachedENIs() {
		if s.listed(e, now) {
			s.addENILeaves(leaves, e, now)
		}
	}
	if v6 := s.instanceIPv6(primary, now); v6 != "" {
		leaves["ipv6"] = v6
	}
	return leaves
}

// listed: IMDS shows an attached ENI once its link exists and IMDSLag passed.
func (s *Sim) listed(e *eniRec, now time.Time) bool {
	return e.attach.linked && s.visible(e.attach.at, now)
}

func (s *Sim) visible(changed, now time.Time) bool {
	return changed.IsZero() || now.Sub(changed) >= s.faults.IMDSLag
}

func (s *Sim) addENILeaves(leaves map[string]string, e *eniRec, now time.Time) {
	dir := "network/interfaces/macs/" + e.mac + "/"
	set := func(k, v string) { leaves[dir+k] = v }
	set("device-number", strconv.Itoa(e.attach.deviceIndex))
	set("interface-id", e.id)
	set("mac", e.mac)
	set("owner-id", s.ownerID)
	if e.primary.IsValid() { // an efa-only ENI has no IPv4: no local-ipv4s, no hostname
		set("local-hostname", s.dnsName(e.primary))
	}
	set("subnet-id", e.subnetID)
	set("subnet-ipv4-cidr-block", s.poolOf(e.subnetID).cidr.String())
	set("vpc-id", s.vpcID)
	set("vpc-ipv4-cidr-block", s.cfg.VPCCIDR.Masked().String())
	set("vpc-ipv4-cidr-blocks", strings.Join(s.vpcCIDRs(), "\n"))
	set("security-group-ids", strings.Join(e.groups, "\n"))
	names := make([]string, 0, len(e.groups))
	for _, g := range e.groups {
		names = append(names, s.nameOfGroup(g))
	}
	set("security-groups", strings.Join(names, "\n"))
	set("network-card", strconv.Itoa(e.attach.cardIndex))
	set("network-card-index", strconv.Itoa(e.attach.cardIndex))
	ips, prefixes := s.imdsAddrs(e, now)
	if len(ips) > 0 {
		set("local-ipv4s", strings.Join(ips, "\n"))
	}
	if len(prefixes) > 0 {
		set("ipv4-prefix", strings.Join(prefixes, "\n"))
	}
	s.addENIv6Leaves(set, e, now)
}

// imdsAddrs is what IMDS shows of the ENI's addresses: changes older than
// IMDSLag. Addresses unassigned within the lag are still shown.
func (s *Sim) imdsAddrs(e *eniRec, now time.Time) (ips, prefixes []string) {
	shownIPs := map[netip.Addr]bool{}
	shownPfx := map[netip.Prefix]bool{}
	for a, at := range e.secondary {
		if s.visible(at, now) {
			shownIPs[a] = true
		}
	}
	for p, at := range e.prefixes {
		if s.visible(at, now) {
			shownPfx[p] = true
		}
	}
	for p, at := range e.gone {
		switch {
		case s.visible(at, now):
			delete(e.gone, p) // IMDS has caught up
		case p.Bits() == 32:
			shownIPs[p.Addr()] = true
		default:
			shownPfx[p] = true
		}
	}
	if e.primary.IsValid() {
		ips = []string{e.primary.String()}
	}
	for _, a := range sortedAddrs(shownIPs) {
		ips = append(ips, a.String())
	}
	for _, p := range sortedPrefixes(shownPfx) {
		prefixes = append(prefixes, p.String())
	}
	return ips, prefixes
}

func (s *Sim) iamInfo() string {
	b, _ := json.Marshal(map[string]string{"Code": "Success", "LastUpdated": ec2Time(s.launchTime),
		"InstanceProfileArn": "arn:aws:iam::" + s.ownerID + ":instance-profile/" + imdsRole,
		"InstanceProfileId":  "AIPAEC2SIMPROFILE"})
	return string(b)
}

// roleCredentials are the instance role's credentials, valid for 6 hours from now.
func (s *Sim) roleCredentials() string {
	now := s.now()
	b, _ := json.Marshal(map[string]string{"Code": "Success", "LastUpdated": now.UTC().Format(time.RFC3339),
		"Type": "AWS-HMAC", "AccessKeyId": "ASIAEC2SIMROLE", "SecretAccessKey": "ec2sim-role-secret",
		"Token": "ec2sim-role-session-token", "Expiration": now.Add(6 * time.Hour).UTC().Format(time.RFC3339)})
	return string(b)
}

func (s *Sim) identityDocument() string {
	b, _ := json.Marshal(map[string]any{"availabilityZone": s.cfg.AZ, "privateIp": s.primaryENI().primary.String(),
		"region": s.cfg.Region, "instanceId": s.cfg.InstanceID, "instanceType": s.cfg.InstanceType,
		"accountId": s.ownerID, "imageId": s.imageID, "architecture": "x86_64", "version": "2017-09-30",
		"pendingTime": ec2Time(s.launchTime)})
	return string(b)
}

// DetachRole takes the instance profile off the instance: IMDS serves its
// identity but no role credentials.
func (s *Sim) DetachRole() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noRole = true
}
