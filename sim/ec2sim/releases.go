package ec2sim

import (
	"net/netip"
	"slices"
	"time"
)

// Release is one successful call that took addresses or an ENI away from
// the node: what a test compares with the pods that were live then.
type Release struct {
	Time   time.Time // the wall clock when the emulator ran the call
	Action string    // UnassignPrivateIpAddresses, UnassignIpv6Addresses, DetachNetworkInterface, DeleteNetworkInterface
	ENIID  string
	Addrs  []netip.Prefix // the addresses (/32, /128) and prefixes unassigned; none for an ENI call
}

// noteRelease records a release; the caller holds s.mu.
func (s *Sim) noteRelease(action, eniID string, addrs []netip.Prefix) {
	s.releases = append(s.releases, Release{Time: time.Now(), Action: action, ENIID: eniID, Addrs: addrs})
}

// Releases returns every release since the emulator started, oldest first.
func (s *Sim) Releases() []Release {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.releases)
}

// prefixesOf lists addresses as host prefixes, then the prefixes.
func prefixesOf(addrs []netip.Addr, pfxs []netip.Prefix) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(addrs)+len(pfxs))
	for _, a := range addrs {
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return append(out, pfxs...)
}
