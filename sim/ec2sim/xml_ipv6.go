package ec2sim

import (
	"net/netip"
	"strings"
	"time"
)

// The IPv6 parts of DescribeNetworkInterfaces (and DescribeInstances),
// DescribeSubnets and IMDS. Callers hold s.mu.

type ipv6AddrXML struct {
	Ipv6Address   string `xml:"ipv6Address"`
	IsPrimaryIpv6 bool   `xml:"isPrimaryIpv6"`
}

type ipv6PrefixXML struct {
	Ipv6Prefix string `xml:"ipv6Prefix"`
}

type subnetIPv6XML struct {
	AssociationID        string            `xml:"associationId"`
	Ipv6CidrBlock        string            `xml:"ipv6CidrBlock"`
	Ipv6CidrBlockState   cidrBlockStateXML `xml:"ipv6CidrBlockState"`
	IPSource             string            `xml:"ipSource"`
	Ipv6AddressAttribute string            `xml:"ipv6AddressAttribute"`
}

type cidrBlockStateXML struct {
	State string `xml:"state"`
}

// renderIPv6 fills the ENI's ipv6AddressesSet and ipv6PrefixSet.
func (s *Sim) renderIPv6(ni *niXML, e *eniRec) {
	addrs, pfxs := s.eniIPv6Lists(e.id)
	for _, a := range addrs {
		ni.Ipv6Addresses = append(ni.Ipv6Addresses, ipv6AddrXML{Ipv6Address: a.String()})
	}
	for _, p := range pfxs {
		ni.Ipv6Prefixes = append(ni.Ipv6Prefixes, ipv6PrefixXML{Ipv6Prefix: p.String()})
	}
}

// subnetIPv6 is the subnet's ipv6CidrBlockAssociationSet: its /64, or none.
func (s *Sim) subnetIPv6(id string) []subnetIPv6XML {
	sub := s.subnetV6(id)
	if sub == nil {
		return nil
	}
	assoc := "subnet-cidr-assoc-" + strings.TrimPrefix(id, "subnet-")
	return []subnetIPv6XML{{AssociationID: assoc, Ipv6CidrBlock: sub.cidr.String(),
		Ipv6CidrBlockState: cidrBlockStateXML{State: "associated"}, IPSource: "amazon", Ipv6AddressAttribute: "private"}}
}

// addENIv6Leaves adds the ENI's IPv6 keys under its MAC: each only when it
// has a value, as IMDS answers 404 for the others.
func (s *Sim) addENIv6Leaves(set func(k, v string), e *eniRec, now time.Time) {
	set("vpc-ipv6-cidr-blocks", s.ipv6().vpc.String())
	if sub := s.subnetV6(e.subnetID); sub != nil {
		set("subnet-ipv6-cidr-blocks", sub.cidr.String())
	}
	addrs, pfxs := s.imdsIPv6(e.id, now)
	if len(addrs) > 0 {
		set("ipv6s", strings.Join(addrs, "\n"))
	}
	if len(pfxs) > 0 {
		set("ipv6-prefix", strings.Join(pfxs, "\n"))
	}
}

// instanceIPv6 is the instance-level "ipv6": the primary ENI's first IPv6
// address as IMDS shows it, or "" (404).
func (s *Sim) instanceIPv6(primary *eniRec, now time.Time) string {
	addrs, _ := s.imdsIPv6(primary.id, now)
	if len(addrs) == 0 {
		return ""
	}
	return addrs[0]
}

// imdsIPv6 is what IMDS shows of the ENI's IPv6: changes older than IMDSLag;
// what was unassigned within the lag is still shown.
func (s *Sim) imdsIPv6(id string, now time.Time) (addrs, pfxs []string) {
	if s.v6 == nil || s.v6.enis[id] == nil {
		return nil, nil
	}
	rec := s.v6.enis[id]
	shownAddrs := map[netip.Addr]bool{}
	shownPfx := map[netip.Prefix]bool{}
	for a, at := range rec.addrs {
		shownAddrs[a] = shownAddrs[a] || s.visible(at, now)
	}
	for p, at := range rec.prefixes {
		shownPfx[p] = shownPfx[p] || s.visible(at, now)
	}
	for p, at := range rec.gone {
		switch {
		case s.visible(at, now):
			delete(rec.gone, p) // IMDS has caught up
		case p.Bits() == 128:
			shownAddrs[p.Addr()] = true
		default:
			shownPfx[p] = true
		}
	}
	for _, a := range sortedAddrs(shownAddrs) {
		if shownAddrs[a] {
			addrs = append(addrs, a.String())
		}
	}
	for _, p := range sortedPrefixes(shownPfx) {
		if shownPfx[p] {
			pfxs = append(pfxs, p.String())
		}
	}
	return addrs, pfxs
}
