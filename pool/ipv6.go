package pool

import (
	"fmt"
	"net/netip"
	"slices"
	"time"
)

// The IPv6 pool: one delegated /80 on the primary ENI (the reference's
// IPv6 mode), pods a /128 each from it. A /80 holds 2^48 addresses, so the
// pool is never materialised: the store keeps only the /128s held (assigned
// or cooling) and the choice is the lowest address not among them.

// Family modes, as status reports them.
const (
	FamilyIPv4      = "ipv4"
	FamilyIPv6      = "ipv6"
	FamilyDualStack = "dual-stack"
)

// The egress ranges of the reference's egress-cni plugin: v4if0 addresses
// of IPv6 pods and v6if0 addresses of IPv4 pods (per node, never routed
// outside it).
var (
	EgressV4Range = netip.MustParsePrefix("169.254.172.0/22")
	EgressV6Range = netip.MustParsePrefix("fd00::ac:0/118")
)

// PodIPv4 reports whether pods get a VPC IPv4 address.
func (c Config) PodIPv4() bool { return !c.IPv4Off }

// PodIPv6 reports whether pods get a VPC IPv6 address.
func (c Config) PodIPv6() bool { return c.IPv6 }

// IPv6Only reports ENABLE_IPv6=true with ENABLE_IPv4=false.
func (c Config) IPv6Only() bool { return c.IPv6 && c.IPv4Off }

// Family names the mode: FamilyIPv4, FamilyIPv6 or FamilyDualStack.
func (c Config) Family() string {
	switch {
	case c.IPv6Only():
		return FamilyIPv6
	case c.IPv6:
		return FamilyDualStack
	}
	return FamilyIPv4
}

// EgressRange is the range a pod's egress interface takes its address
// from in this mode (v4if0 for IPv6-only pods, v6if0 for IPv4-only pods),
// and false when pods get none. Dual-stack pods have both families already.
func (c Config) EgressRange() (netip.Prefix, bool) {
	switch {
	case c.IPv6Only() && c.V4Egress:
		return EgressV4Range, true
	case !c.IPv6 && c.V6Egress:
		return EgressV6Range, true
	}
	return netip.Prefix{}, false
}

// Held is one /128 (or egress address) a pod holds or freed: Assigned, or
// Cooling since Since.
type Held struct {
	IP    netip.Addr
	State State
	Since time.Time
}

// PickIPv6 chooses a pod's /128 in prefix: the lowest address that is not
// the prefix's network address (the reference hands that out to the first
// pod) and is neither assigned nor cooling within cooldown. held lists the
// held addresses ascending; those outside prefix are ignored, so the /128s
// pods keep from a replaced /80 block the same addresses if EC2 gives that
// /80 back. ok is false only when every address of the prefix is held.
func PickIPv6(prefix netip.Prefix, held []Held, now time.Time, cooldown time.Duration) (netip.Addr, bool) {
	prefix = prefix.Masked()
	if !prefix.IsValid() || !prefix.Addr().Is6() {
		return netip.Addr{}, false
	}
	return lowestFree(prefix, prefix.Addr().Next(), netip.Addr{}, held, now, cooldown)
}

// PickEgress chooses a pod's egress address in r as host-local did for the
// reference: not the network address, not the gateway (.1, the node side),
// and for IPv4 not the broadcast address; the lowest not held. Egress
// addresses do not cool (held Cooling entries within cooldown still count).
func PickEgress(r netip.Prefix, held []Held, now time.Time, cooldown time.Duration) (netip.Addr, bool) {
	r = r.Masked()
	if !r.IsValid() {
		return netip.Addr{}, false
	}
	var last netip.Addr
	if r.Addr().Is4() {
		last = lastAddr(r) // broadcast
	}
	return lowestFree(r, r.Addr().Next().Next(), last, held, now, cooldown)
}

// EgressGateway is the node side's address of an egress range: its .1.
func EgressGateway(r netip.Prefix) netip.Addr { return r.Masked().Addr().Next() }

// lowestFree walks from first upward over the sorted held addresses, to the
// first address in r that no held entry blocks; stop (when valid) is
// excluded. Cost: one step per held address at or above first.
func lowestFree(r netip.Prefix, first, stop netip.Addr, held []Held, now time.Time, cooldown time.Duration) (netip.Addr, bool) {
	cand := first
	i, _ := slices.BinarySearchFunc(held, cand, func(h Held, a netip.Addr) int { return h.IP.Compare(a) })
	for ; i < len(held) && r.Contains(cand); i++ {
		h := held[i]
		switch c := h.IP.Compare(cand); {
		case c > 0:
			return cand, cand != stop
		case c == 0 && !Usable(Addr{State: h.State, Since: h.Since}, now, cooldown):
			cand = cand.Next()
		case c == 0:
			return cand, cand != stop // a cooled address is free again
		}
	}
	if !cand.IsValid() || !r.Contains(cand) || cand == stop {
		return netip.Addr{}, false
	}
	return cand, true
}

func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// IPv6Plan is what a pass does about the primary ENI's /80.
type IPv6Plan struct {
	Keep    netip.Prefix   // the /80 pods take from (zero: Assign one)
	Adopted bool           // Keep was on the ENI but is not the pool's recorded /80
	Assign  bool           // ask EC2 for one /80 (AssignIpv6Addresses Ipv6PrefixCount=1)
	Release []netip.Prefix // extra /80s vpc-cni assigned, no longer in use
}

// PlanIPv6 decides from the pool's recorded /80 (current), the /80s vpc-cni
// itself assigned (ours), the /80s the primary ENI has (onENI, EC2's or
// IMDS's word) and those any pod still holds an address in (inUse): keep
// current while the ENI has it; else adopt the lowest /80 the ENI has (one
// EC2 already lists); else assign one. Extra /80s are released only when
// vpc-cni assigned them and no pod holds an address in them; others are
// left alone (not ours to take away).
func PlanIPv6(current netip.Prefix, ours, onENI, inUse []netip.Prefix) IPv6Plan {
	var p IPv6Plan
	sorted := slices.Clone(onENI)
	slices.SortFunc(sorted, ComparePrefix)
	switch {
	case current.IsValid() && slices.Contains(sorted, current):
		p.Keep = current
	case len(sorted) > 0:
		p.Keep, p.Adopted = sorted[0], true
	default:
		p.Assign = true
	}
	for _, q := range sorted {
		if q != p.Keep && slices.Contains(ours, q) && !slices.Contains(inUse, q) {
			p.Release = append(p.Release, q)
		}
	}
	return p
}

// ComparePrefix orders prefixes by address, then length.
func ComparePrefix(a, b netip.Prefix) int {
	if c := a.Addr().Compare(b.Addr()); c != 0 {
		return c
	}
	return a.Bits() - b.Bits()
}

// String says the plan in one line, for logs and dry runs.
func (p IPv6Plan) String() string {
	switch {
	case p.Assign:
		return fmt.Sprintf("assign one /80, release %v", p.Release)
	case p.Adopted:
		return fmt.Sprintf("adopt %s, release %v", p.Keep, p.Release)
	}
	return fmt.Sprintf("keep %s, release %v", p.Keep, p.Release)
}
