package ec2sim

import (
	"fmt"
	"net/netip"
	"slices"
	"time"
)

// eniRec is the emulator's record of one network interface.
type eniRec struct {
	seq             int // creation order: the pagination order
	id, mac         string
	subnetID        string
	description     string
	groups          []string
	sourceDestCheck bool
	attach          *attachment // nil while detached
	primary         netip.Addr
	secondary       map[netip.Addr]time.Time   // address → when assigned (IMDS lag)
	prefixes        map[netip.Prefix]time.Time // /28 → when assigned
	gone            map[netip.Prefix]time.Time // recently unassigned (/32 or /28) → when; IMDS still shows them
	tags            map[string]string
	createdAt       time.Time
	ifType          string // interfaceType: interface, trunk, efa, efa-only, branch
	branchInUse     bool   // a branch ENI another party associated with a trunk: in-use, never attached
}

type attachment struct {
	id                  string
	instanceID          string
	deviceIndex         int
	cardIndex           int
	deleteOnTermination bool
	at                  time.Time
	// linked: the ENI's link exists on the node (at once, or after
	// Faults.LinkDelay); IMDS lists the ENI only then. pending is the timer
	// that will create it.
	linked  bool
	pending *time.Timer
}

func newENIRec(seq int, id, mac, subnetID string, now time.Time) *eniRec {
	return &eniRec{seq: seq, id: id, mac: mac, subnetID: subnetID, sourceDestCheck: true,
		secondary: map[netip.Addr]time.Time{}, prefixes: map[netip.Prefix]time.Time{},
		gone: map[netip.Prefix]time.Time{}, tags: map[string]string{}, createdAt: now, ifType: TypeInterface}
}

// slots is what counts against Ipv4AddressesPerInterface: the primary, every
// secondary and every /28 prefix (one slot each).
func (e *eniRec) slots() int { return 1 + len(e.secondary) + len(e.prefixes) }

func (e *eniRec) status() string {
	if e.attach != nil || e.branchInUse {
		return "in-use"
	}
	return "available"
}

func (e *eniRec) deviceIndex() int {
	if e.attach == nil {
		return -1
	}
	return e.attach.deviceIndex
}

func (e *eniRec) secondaryList() []netip.Addr { return sortedAddrs(e.secondary) }
func (e *eniRec) prefixList() []netip.Prefix  { return sortedPrefixes(e.prefixes) }

// allAddrs is the primary first, then the secondaries ascending. An
// efa-only ENI has no IPv4 address at all.
func (e *eniRec) allAddrs() []netip.Addr {
	if !e.primary.IsValid() {
		return e.secondaryList()
	}
	return append([]netip.Addr{e.primary}, e.secondaryList()...)
}

func sortedAddrs[V any](m map[netip.Addr]V) []netip.Addr {
	out := make([]netip.Addr, 0, len(m))
	for a := range m {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b netip.Addr) int { return a.Compare(b) })
	return out
}

func sortedPrefixes[V any](m map[netip.Prefix]V) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr()) })
	return out
}

func copyTags(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// idGen makes ids that look like EC2's but are deterministic per emulator
// (splitmix64), so failures reproduce.
type idGen struct{ state uint64 }

func (g *idGen) next() uint64 {
	g.state += 0x9e3779b97f4a7c15
	z := g.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func (g *idGen) hex16() string { return fmt.Sprintf("%016x", g.next()) }

// mac is a locally administered unicast MAC (first octet 02).
func (g *idGen) mac() string {
	v := g.next()
	return fmt.Sprintf("02:%02x:%02x:%02x:%02x:%02x", byte(v>>32), byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

func seedFrom(s string) uint64 {
	h := uint64(14695981039346656037) // FNV-1a
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
