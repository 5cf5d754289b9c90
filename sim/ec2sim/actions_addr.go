package ec2sim

import (
	"net/netip"
	"time"
)

// addrRequest is what a Create or Assign asks of the subnet for one ENI.
type addrRequest struct {
	count       int          // SecondaryPrivateIpAddressCount
	ips         []netip.Addr // explicit secondary addresses
	prefixCount int          // Ipv4PrefixCount
	prefixes    []netip.Prefix
}

func (r addrRequest) slots() int { return r.count + len(r.ips) + r.prefixCount + len(r.prefixes) }

func (r addrRequest) wantsIPs() bool      { return r.count > 0 || len(r.ips) > 0 }
func (r addrRequest) wantsPrefixes() bool { return r.prefixCount > 0 || len(r.prefixes) > 0 }

// readCounts reads the two count parameters shared by Create and Assign.
func readCounts(f form) (addrRequest, *apiError) {
	var r addrRequest
	var err *apiError
	if r.count, _, err = f.intParam("SecondaryPrivateIpAddressCount"); err != nil {
		return r, err
	}
	if r.prefixCount, _, err = f.intParam("Ipv4PrefixCount"); err != nil {
		return r, err
	}
	if r.count < 0 || r.prefixCount < 0 {
		return r, errInvalidParameterValue("Address and prefix counts must not be negative")
	}
	return r, nil
}

func parseAddrs(raw []string) ([]netip.Addr, *apiError) {
	var out []netip.Addr
	for _, s := range raw {
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is4() {
			return nil, errInvalidParameterValue("Invalid private IP address: '%s'", s)
		}
		out = append(out, a)
	}
	return out, nil
}

func parsePrefixes(raw []string) ([]netip.Prefix, *apiError) {
	var out []netip.Prefix
	for _, s := range raw {
		p, err := netip.ParsePrefix(s)
		if err != nil || !p.Addr().Is4() || p.Bits() != 28 || p.Masked() != p {
			return nil, errInvalidParameterValue("Invalid IPv4 prefix: '%s' (expecting an aligned /28)", s)
		}
		out = append(out, p)
	}
	return out, nil
}

// reserve takes everything r asks for from the subnet, all or nothing. The
// slot limit (primary + secondaries + prefixes ≤ IPv4PerENI) is checked first.
func (s *Sim) reserve(sub *subnetPool, usedSlots int, r addrRequest) ([]netip.Addr, []netip.Prefix, *apiError) {
	if usedSlots+r.slots() > s.typ.IPv4PerENI {
		return nil, nil, newAPIError("PrivateIpAddressLimitExceeded", "Number of private addresses will exceed limit.")
	}
	var ips []netip.Addr
	var pfxs []netip.Prefix
	undo := func() {
		for _, a := range ips {
			sub.release(a)
		}
		for _, p := range pfxs {
			sub.releasePrefix(p)
		}
	}
	err := reserveInto(sub, r, &ips, &pfxs)
	if err != nil {
		undo()
		return nil, nil, err
	}
	return ips, pfxs, nil
}

func reserveInto(sub *subnetPool, r addrRequest, ips *[]netip.Addr, pfxs *[]netip.Prefix) *apiError {
	for _, a := range r.ips {
		if _, ok := sub.offset(a); !ok {
			return errInvalidParameterValue("Address %s does not fall within the subnet's address range", a)
		}
		if sub.reserved(a) {
			return errInvalidParameterValue("Address %s is reserved by AWS and cannot be assigned", a)
		}
		if !sub.take(a) {
			return newAPIError("InvalidIPAddress.InUse", "Address %s is in use.", a)
		}
		*ips = append(*ips, a)
	}
	for _, p := range r.prefixes {
		if _, ok := sub.offset(p.Addr()); !ok {
			return errInvalidParameterValue("Prefix %s does not fall within the subnet's address range", p)
		}
		if !sub.takePrefix(p) {
			return errInvalidParameterValue("Prefix %s is in use or overlaps addresses in use.", p)
		}
		*pfxs = append(*pfxs, p)
	}
	more, ok := sub.allocLowest(r.count)
	if !ok {
		return injectedError("InsufficientFreeAddressesInSubnet", "")
	}
	*ips = append(*ips, more...)
	for i := 0; i < r.prefixCount; i++ {
		p, ok := sub.allocPrefix()
		if !ok {
			return injectedError("InsufficientCidrBlocks", "")
		}
		*pfxs = append(*pfxs, p)
	}
	return nil
}

// give records reserved addresses on the ENI; IMDS shows them after the lag.
func (e *eniRec) give(ips []netip.Addr, pfxs []netip.Prefix, now time.Time) {
	for _, a := range ips {
		e.secondary[a] = now
		delete(e.gone, netip.PrefixFrom(a, 32))
	}
	for _, p := range pfxs {
		e.prefixes[p] = now
		delete(e.gone, p)
	}
}

type assignResp struct {
	respMeta
	NetworkInterfaceID string         `xml:"networkInterfaceId"`
	AssignedIPs        []privateIPXML `xml:"assignedPrivateIpAddressesSet>item"`
	AssignedPrefixes   []prefixXML    `xml:"assignedIpv4PrefixSet>item"`
	Return             bool           `xml:"return"`
}

func (s *Sim) assignPrivateIPAddresses(f form) (response, *apiError) {
	e, err := s.eniParam(f)
	if err != nil {
		return nil, err
	}
	r, err := readAssignRequest(f)
	if err != nil {
		return nil, err
	}
	ips, pfxs, err := s.reserve(s.poolOf(e.subnetID), e.slots(), r)
	if err != nil {
		return nil, err
	}
	e.give(ips, pfxs, s.now())
	resp := &assignResp{NetworkInterfaceID: e.id, Return: true}
	for _, a := range ips {
		resp.AssignedIPs = append(resp.AssignedIPs, privateIPXML{PrivateIPAddress: a.String()})
	}
	for _, p := range pfxs {
		resp.AssignedPrefixes = append(resp.AssignedPrefixes, prefixXML{Ipv4Prefix: p.String()})
	}
	return resp, nil
}

func readAssignRequest(f form) (addrRequest, *apiError) {
	r, err := readCounts(f)
	if err != nil {
		return r, err
	}
	if r.ips, err = parseAddrs(f.list("PrivateIpAddress")); err != nil {
		return r, err
	}
	if r.prefixes, err = parsePrefixes(f.list("Ipv4Prefix")); err != nil {
		return r, err
	}
	switch {
	case r.count > 0 && len(r.ips) > 0:
		return r, newAPIError("InvalidParameterCombination",
			"You may specify secondaryPrivateIpAddressCount or specific secondary private IP addresses, but not both.")
	case r.prefixCount > 0 && len(r.prefixes) > 0:
		return r, newAPIError("InvalidParameterCombination",
			"You may specify ipv4PrefixCount or specific IPv4 prefixes, but not both.")
	case r.slots() == 0:
		return r, newAPIError("MissingParameter", "Either secondaryPrivateIpAddressCount, privateIpAddress, "+
			"ipv4PrefixCount or ipv4Prefix must be specified.")
	}
	return r, nil
}

func (s *Sim) unassignPrivateIPAddresses(f form) (response, *apiError) {
	e, err := s.eniParam(f)
	if err != nil {
		return nil, err
	}
	ips, err := parseAddrs(f.list("PrivateIpAddress"))
	if err != nil {
		return nil, err
	}
	pfxs, err := parsePrefixes(f.list("Ipv4Prefix"))
	if err != nil {
		return nil, err
	}
	if len(ips)+len(pfxs) == 0 {
		return nil, newAPIError("MissingParameter", "Either privateIpAddress or ipv4Prefix must be specified.")
	}
	if err := checkUnassign(e, ips, pfxs); err != nil {
		return nil, err
	}
	now := s.now()
	for _, a := range ips {
		delete(e.secondary, a)
		e.gone[netip.PrefixFrom(a, 32)] = now
		s.poolOf(e.subnetID).release(a)
	}
	for _, p := range pfxs {
		delete(e.prefixes, p)
		e.gone[p] = now
		s.poolOf(e.subnetID).releasePrefix(p)
	}
	s.noteRelease("UnassignPrivateIpAddresses", e.id, prefixesOf(ips, pfxs))
	return okReturn(), nil
}

func checkUnassign(e *eniRec, ips []netip.Addr, pfxs []netip.Prefix) *apiError {
	for _, a := range ips {
		if a == e.primary {
			return errInvalidParameterValue("The primary private IP address %s of interface %s cannot be unassigned.", a, e.id)
		}
		if _, ok := e.secondary[a]; !ok {
			return errInvalidParameterValue("Some of the specified addresses are not assigned to interface %s", e.id)
		}
	}
	for _, p := range pfxs {
		if _, ok := e.prefixes[p]; !ok {
			return errInvalidParameterValue("Some of the specified prefixes are not assigned to interface %s", e.id)
		}
	}
	return nil
}

// eniParam resolves the NetworkInterfaceId parameter.
func (s *Sim) eniParam(f form) (*eniRec, *apiError) {
	id := f.get("NetworkInterfaceId")
	if id == "" {
		return nil, newAPIError("MissingParameter", "The request must contain the parameter networkInterfaceId")
	}
	if !isResourceID(id, "eni-") {
		return nil, newAPIError("InvalidNetworkInterfaceId.Malformed", "Invalid id: \"%s\" (expecting \"eni-...\")", id)
	}
	e := s.enis[id]
	if e == nil {
		return nil, errENINotFound(id)
	}
	return e, nil
}
