package ec2sim

import (
	"net/netip"
)

// AssignIpv6Addresses and UnassignIpv6Addresses. Neither takes a
// ClientToken at EC2 (the SDK's inputs have none), as AssignPrivateIpAddresses.

// v6Request is what an AssignIpv6Addresses asks for.
type v6Request struct {
	count       int // Ipv6AddressCount
	addrs       []netip.Addr
	prefixCount int // Ipv6PrefixCount
	prefixes    []netip.Prefix
}

func (r v6Request) slots() int { return r.count + len(r.addrs) + r.prefixCount + len(r.prefixes) }

type assignV6Resp struct {
	respMeta
	NetworkInterfaceID string   `xml:"networkInterfaceId"`
	AssignedAddrs      []string `xml:"assignedIpv6Addresses>item"`
	AssignedPrefixes   []string `xml:"assignedIpv6PrefixSet>item"`
}

type unassignV6Resp struct {
	respMeta
	NetworkInterfaceID string   `xml:"networkInterfaceId"`
	UnassignedAddrs    []string `xml:"unassignedIpv6Addresses>item"`
	UnassignedPrefixes []string `xml:"unassignedIpv6PrefixSet>item"`
}

func parseAddrs6(raw []string) ([]netip.Addr, *apiError) {
	var out []netip.Addr
	for _, s := range raw {
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is6() || a.Is4In6() || a.Zone() != "" {
			return nil, errInvalidParameterValue("Invalid IPv6 address: '%s'", s)
		}
		out = append(out, a)
	}
	return out, nil
}

func parsePrefixes6(raw []string) ([]netip.Prefix, *apiError) {
	var out []netip.Prefix
	for _, s := range raw {
		p, err := netip.ParsePrefix(s)
		if err != nil || !p.Addr().Is6() || p.Addr().Is4In6() || p.Bits() != prefix6Bits || p.Masked() != p {
			return nil, errInvalidParameterValue("Invalid IPv6 prefix: '%s' (expecting an aligned /80)", s)
		}
		out = append(out, p)
	}
	return out, nil
}

func readV6Request(f form) (v6Request, *apiError) {
	var r v6Request
	var err *apiError
	if r.count, _, err = f.intParam("Ipv6AddressCount"); err != nil {
		return r, err
	}
	if r.prefixCount, _, err = f.intParam("Ipv6PrefixCount"); err != nil {
		return r, err
	}
	if r.count < 0 || r.prefixCount < 0 {
		return r, errInvalidParameterValue("Address and prefix counts must not be negative")
	}
	if r.addrs, err = parseAddrs6(f.list("Ipv6Addresses")); err != nil {
		return r, err
	}
	if r.prefixes, err = parsePrefixes6(f.list("Ipv6Prefix")); err != nil {
		return r, err
	}
	switch {
	case r.count > 0 && len(r.addrs) > 0:
		return r, newAPIError("InvalidParameterCombination",
			"You may specify ipv6AddressCount or specific IPv6 addresses, but not both.")
	case r.prefixCount > 0 && len(r.prefixes) > 0:
		return r, newAPIError("InvalidParameterCombination",
			"You may specify ipv6PrefixCount or specific IPv6 prefixes, but not both.")
	case r.slots() == 0:
		return r, newAPIError("MissingParameter",
			"Either ipv6AddressCount, ipv6Addresses, ipv6PrefixCount or ipv6Prefix must be specified.")
	}
	return r, nil
}

func (s *Sim) assignIPv6Addresses(f form) (response, *apiError) {
	e, err := s.eniParam(f)
	if err != nil {
		return nil, err
	}
	r, err := readV6Request(f)
	if err != nil {
		return nil, err
	}
	sub := s.subnetV6(e.subnetID)
	if sub == nil {
		return nil, errInvalidParameterValue("The subnet '%s' of network interface '%s' has no IPv6 CIDR block associated with it.",
			e.subnetID, e.id)
	}
	rec := s.eniIPv6(e.id)
	if rec.slots()+r.slots() > s.typ.IPv4PerENI {
		return nil, newAPIError("PrivateIpAddressLimitExceeded", "Number of IPv6 addresses will exceed limit.")
	}
	addrs, pfxs, err := reserve6(sub, e.id, r)
	if err != nil {
		return nil, err
	}
	now := s.now()
	resp := &assignV6Resp{NetworkInterfaceID: e.id}
	for _, a := range addrs {
		rec.addrs[a] = now
		delete(rec.gone, netip.PrefixFrom(a, 128))
		resp.AssignedAddrs = append(resp.AssignedAddrs, a.String())
	}
	for _, p := range pfxs {
		rec.prefixes[p] = now
		delete(rec.gone, p)
		resp.AssignedPrefixes = append(resp.AssignedPrefixes, p.String())
	}
	return resp, nil
}

// reserve6 takes what r asks for from the subnet's /64, all or nothing.
func reserve6(sub *v6Subnet, eniID string, r v6Request) ([]netip.Addr, []netip.Prefix, *apiError) {
	var addrs []netip.Addr
	var pfxs []netip.Prefix
	fail := func(err *apiError) ([]netip.Addr, []netip.Prefix, *apiError) {
		for _, a := range addrs {
			delete(sub.addrs, a)
		}
		for _, p := range pfxs {
			delete(sub.prefixes, p)
		}
		return nil, nil, err
	}
	for _, a := range r.addrs {
		if err := sub.checkAddr(a); err != nil {
			return fail(err)
		}
		sub.addrs[a] = eniID
		addrs = append(addrs, a)
	}
	for _, p := range r.prefixes {
		if err := sub.checkPrefix(p); err != nil {
			return fail(err)
		}
		sub.prefixes[p] = eniID
		pfxs = append(pfxs, p)
	}
	for range r.count {
		a, ok := sub.nextAddr()
		if !ok {
			return fail(injectedError("InsufficientFreeAddressesInSubnet", ""))
		}
		sub.addrs[a] = eniID
		addrs = append(addrs, a)
	}
	for range r.prefixCount {
		p, ok := sub.nextPrefix()
		if !ok {
			return fail(injectedError("InsufficientCidrBlocks", ""))
		}
		sub.prefixes[p] = eniID
		pfxs = append(pfxs, p)
	}
	return addrs, pfxs, nil
}

func (s *Sim) unassignIPv6Addresses(f form) (response, *apiError) {
	e, err := s.eniParam(f)
	if err != nil {
		return nil, err
	}
	addrs, err := parseAddrs6(f.list("Ipv6Addresses"))
	if err != nil {
		return nil, err
	}
	pfxs, err := parsePrefixes6(f.list("Ipv6Prefix"))
	if err != nil {
		return nil, err
	}
	if len(addrs)+len(pfxs) == 0 {
		return nil, newAPIError("MissingParameter", "Either ipv6Addresses or ipv6Prefix must be specified.")
	}
	rec := s.eniIPv6(e.id)
	for _, a := range addrs {
		if _, ok := rec.addrs[a]; !ok {
			return nil, errInvalidParameterValue("Some of the specified IPv6 addresses are not assigned to interface %s", e.id)
		}
	}
	for _, p := range pfxs {
		if _, ok := rec.prefixes[p]; !ok {
			return nil, errInvalidParameterValue("Some of the specified IPv6 prefixes are not assigned to interface %s", e.id)
		}
	}
	s.noteRelease("UnassignIpv6Addresses", e.id, prefixesOf(addrs, pfxs))
	return s.takeBackIPv6(e, rec, addrs, pfxs), nil
}

// takeBackIPv6 unassigns checked addresses and prefixes; IMDS still shows
// them for the lag.
func (s *Sim) takeBackIPv6(e *eniRec, rec *eniV6, addrs []netip.Addr, pfxs []netip.Prefix) response {
	now := s.now()
	sub := s.ipv6().subnets[e.subnetID]
	resp := &unassignV6Resp{NetworkInterfaceID: e.id}
	for _, a := range addrs {
		delete(rec.addrs, a)
		rec.gone[netip.PrefixFrom(a, 128)] = now
		if sub != nil {
			delete(sub.addrs, a)
		}
		resp.UnassignedAddrs = append(resp.UnassignedAddrs, a.String())
	}
	for _, p := range pfxs {
		delete(rec.prefixes, p)
		rec.gone[p] = now
		if sub != nil {
			delete(sub.prefixes, p)
		}
		resp.UnassignedPrefixes = append(resp.UnassignedPrefixes, p.String())
	}
	return resp
}
