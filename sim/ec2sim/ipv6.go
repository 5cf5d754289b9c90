package ec2sim

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"time"
)

// IPv6 as EC2 has it: the VPC holds one /56 (a ULA /56 in fd00::/8 here), a
// subnet one /64 from it, and an ENI /128 addresses and /80 prefixes from its
// subnet's /64. Each address and each /80 takes one of the ENI's
// Ipv6AddressesPerInterface slots (the same number as for IPv4). The state
// lives beside the IPv4 records, so the IPv4 model is untouched by it.

// v6State is the emulator's IPv6 state; s.v6 is made on first use.
type v6State struct {
	vpc      netip.Prefix         // the VPC's /56
	subnets  map[string]*v6Subnet // subnet ID → its /64
	ipv4Only map[string]bool      // subnets whose IPv6 CIDR was disassociated
	enis     map[string]*eniV6    // ENI ID → its IPv6 addresses and prefixes
}

// v6Subnet is one subnet's /64 and what is taken from it.
type v6Subnet struct {
	cidr     netip.Prefix
	addrs    map[netip.Addr]string   // address → the ENI holding it
	prefixes map[netip.Prefix]string // /80 → the ENI holding it
}

// eniV6 is one ENI's IPv6 addresses and prefixes with when they were assigned
// (IMDS lag), and those unassigned lately, which IMDS still shows.
type eniV6 struct {
	addrs    map[netip.Addr]time.Time
	prefixes map[netip.Prefix]time.Time
	gone     map[netip.Prefix]time.Time // /128 or /80 → when unassigned
}

const prefix6Bits = 80 // the size EC2 delegates

// ipv6 returns the IPv6 state, made on first use. The VPC's /56 is derived
// from the instance ID (not drawn from s.ids, so every other ID stays the
// same as without IPv6). The caller holds s.mu.
func (s *Sim) ipv6() *v6State {
	if s.v6 == nil {
		var b [16]byte
		b[0] = 0xfd
		binary.BigEndian.PutUint64(b[1:9], seedFrom("vpc-ipv6/"+s.cfg.InstanceID))
		b[6], b[7], b[8] = 0, 0, 0 // a /56: bits 48..63 pick the subnet
		s.v6 = &v6State{vpc: netip.PrefixFrom(netip.AddrFrom16(b), 56), subnets: map[string]*v6Subnet{},
			ipv4Only: map[string]bool{}, enis: map[string]*eniV6{}}
	}
	return s.v6
}

// subnetV6 is the subnet's /64, or nil when it has no IPv6 CIDR. The n-th
// subnet of the VPC (the node's is the first) gets the n-th /64 of the /56.
func (s *Sim) subnetV6(id string) *v6Subnet {
	v6 := s.ipv6()
	if sub := v6.subnets[id]; sub != nil || v6.ipv4Only[id] {
		return sub
	}
	i := slices.IndexFunc(s.subnets, func(p *subnetPool) bool { return p.id == id })
	if i < 0 || i > 255 {
		return nil
	}
	b := v6.vpc.Addr().As16()
	b[7] = byte(i)
	sub := &v6Subnet{cidr: netip.PrefixFrom(netip.AddrFrom16(b), 64), addrs: map[netip.Addr]string{},
		prefixes: map[netip.Prefix]string{}}
	v6.subnets[id] = sub
	return sub
}

// eniIPv6 is the ENI's IPv6 record, made on first use.
func (s *Sim) eniIPv6(id string) *eniV6 {
	v6 := s.ipv6()
	e := v6.enis[id]
	if e == nil {
		e = &eniV6{addrs: map[netip.Addr]time.Time{}, prefixes: map[netip.Prefix]time.Time{},
			gone: map[netip.Prefix]time.Time{}}
		v6.enis[id] = e
	}
	return e
}

func (e *eniV6) slots() int { return len(e.addrs) + len(e.prefixes) }

// hostOffset is the low 64 bits of a: its place in its /64.
func hostOffset(a netip.Addr) uint64 {
	b := a.As16()
	return binary.BigEndian.Uint64(b[8:])
}

func withOffset(p netip.Prefix, off uint64) netip.Addr {
	b := p.Addr().As16()
	binary.BigEndian.PutUint64(b[8:], off)
	return netip.AddrFrom16(b)
}

// reserved6: AWS keeps the first four and the last address of each subnet
// CIDR, IPv6 ones too.
func reserved6(a netip.Addr) bool {
	off := hostOffset(a)
	return off < 4 || off == ^uint64(0)
}

// inPrefix is the assigned /80 that holds a, if any.
func (p *v6Subnet) inPrefix(a netip.Addr) (netip.Prefix, bool) {
	pfx, _ := a.Prefix(prefix6Bits)
	_, ok := p.prefixes[pfx]
	return pfx, ok
}

// checkAddr says why a cannot be assigned from the subnet, or nil.
func (p *v6Subnet) checkAddr(a netip.Addr) *apiError {
	switch _, used := p.addrs[a]; {
	case !p.cidr.Contains(a):
		return errInvalidParameterValue("Address %s does not fall within the subnet's IPv6 CIDR %s", a, p.cidr)
	case reserved6(a):
		return errInvalidParameterValue("Address %s is reserved by AWS and cannot be assigned", a)
	case used:
		return newAPIError("InvalidIPAddress.InUse", "Address %s is in use.", a)
	}
	if pfx, ok := p.inPrefix(a); ok {
		return newAPIError("InvalidIPAddress.InUse", "Address %s is in use (in the prefix %s).", a, pfx)
	}
	return nil
}

// checkPrefix says why pfx cannot be delegated from the subnet, or nil.
func (p *v6Subnet) checkPrefix(pfx netip.Prefix) *apiError {
	if !p.cidr.Contains(pfx.Addr()) {
		return errInvalidParameterValue("Prefix %s does not fall within the subnet's IPv6 CIDR %s", pfx, p.cidr)
	}
	if _, used := p.prefixes[pfx]; used || hostOffset(pfx.Addr()) == 0 {
		return errInvalidParameterValue("Prefix %s is in use or overlaps addresses in use.", pfx)
	}
	for a := range p.addrs {
		if pfx.Contains(a) {
			return errInvalidParameterValue("Prefix %s is in use or overlaps addresses in use.", pfx)
		}
	}
	return nil
}

// nextAddr is the lowest free address of the subnet's first /80 (the one
// with the reserved addresses, which is never delegated), so that addresses
// and prefixes never meet. ok is false when that /80 is full.
func (p *v6Subnet) nextAddr() (netip.Addr, bool) {
	for off := uint64(4); off < 1<<(128-prefix6Bits); off++ {
		a := withOffset(p.cidr, off)
		if _, used := p.addrs[a]; !used {
			return a, true
		}
	}
	return netip.Addr{}, false
}

// nextPrefix is the lowest free aligned /80 without an address in it.
func (p *v6Subnet) nextPrefix() (netip.Prefix, bool) {
	for k := uint64(1); k < 1<<(prefix6Bits-64); k++ {
		pfx := netip.PrefixFrom(withOffset(p.cidr, k<<(128-prefix6Bits)), prefix6Bits)
		if p.checkPrefix(pfx) == nil {
			return pfx, true
		}
	}
	return netip.Prefix{}, false
}

// dropENIIPv6 gives an ENI's IPv6 addresses and prefixes back to its subnet
// and forgets them: the ENI is deleted.
func (s *Sim) dropENIIPv6(e *eniRec) {
	if s.v6 == nil {
		return
	}
	rec := s.v6.enis[e.id]
	if sub := s.v6.subnets[e.subnetID]; rec != nil && sub != nil {
		for a := range rec.addrs {
			delete(sub.addrs, a)
		}
		for p := range rec.prefixes {
			delete(sub.prefixes, p)
		}
	}
	delete(s.v6.enis, e.id)
}

// VPCIPv6CIDR is the VPC's IPv6 /56 (in fd00::/8).
func (s *Sim) VPCIPv6CIDR() netip.Prefix {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ipv6().vpc
}

// SubnetIPv6CIDR is the subnet's IPv6 /64; ok is false when the subnet has
// none (DisassociateSubnetIPv6) or does not exist.
func (s *Sim) SubnetIPv6CIDR(subnetID string) (netip.Prefix, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sub := s.subnetV6(subnetID); sub != nil {
		return sub.cidr, true
	}
	return netip.Prefix{}, false
}

// DisassociateSubnetIPv6 takes the subnet's IPv6 CIDR away, as
// DisassociateSubnetCidrBlock does: it becomes an IPv4-only subnet, where
// AssignIpv6Addresses is refused. EC2 refuses while an ENI holds IPv6
// addresses from it; so does this.
func (s *Sim) DisassociateSubnetIPv6(subnetID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.poolOf(subnetID) == nil {
		return fmt.Errorf("ec2sim: no subnet %s", subnetID)
	}
	sub := s.subnetV6(subnetID)
	if sub != nil && len(sub.addrs)+len(sub.prefixes) > 0 {
		return fmt.Errorf("ec2sim: subnet %s: IPv6 addresses from %s are in use", subnetID, sub.cidr)
	}
	delete(s.ipv6().subnets, subnetID)
	s.ipv6().ipv4Only[subnetID] = true
	return nil
}

// AddSubnetIPv4Only is AddSubnet for a subnet without an IPv6 CIDR.
func (s *Sim) AddSubnetIPv4Only(cidr netip.Prefix, az string, tags map[string]string) (string, error) {
	id, err := s.AddSubnet(cidr, az, tags)
	if err != nil {
		return "", err
	}
	return id, s.DisassociateSubnetIPv6(id)
}

// eniIPv6Lists are the ENI's IPv6 addresses and prefixes, ascending (for
// State). The caller holds s.mu.
func (s *Sim) eniIPv6Lists(id string) ([]netip.Addr, []netip.Prefix) {
	if s.v6 == nil || s.v6.enis[id] == nil {
		return nil, nil
	}
	rec := s.v6.enis[id]
	return sortedAddrs(rec.addrs), sortedPrefixes(rec.prefixes)
}
