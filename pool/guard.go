package pool

import (
	"net/netip"
	"slices"
)

// RoutedAddr is an address the kernel routes to a running pod's host veth.
type RoutedAddr struct {
	IP   netip.Addr
	Veth string
}

// Hold is one address a release would have taken from a running pod: the
// block that stays for it and the release it was left out of.
type Hold struct {
	IP    netip.Addr   `json:"ip"`
	Veth  string       `json:"veth"`
	ENIID string       `json:"eniId"`
	Block netip.Prefix `json:"block"` // its /32, or the prefix that holds it (the whole /28 stays)
	Kind  ActionKind   `json:"kind"`  // Unassign or DeleteENI
}

// Guard is the kernel's last word on a plan's releases, whatever the store
// said: an Unassign loses every block holding an address in routed (and
// goes when none is left), and a DeleteENI of an ENI carrying one goes
// (snap gives the ENI's blocks). Growth passes untouched. It returns the
// actions kept, in order, and what they no longer release.
func Guard(actions []Action, snap Snapshot, routed []RoutedAddr) ([]Action, []Hold) {
	var out []Action
	var holds []Hold
	for _, a := range actions {
		switch a.Kind {
		case Unassign:
			kept, held := GuardBlocks(a.Release, routed)
			holds = append(holds, holdsOf(held, a.ENIID, Unassign)...)
			if len(kept) == 0 {
				continue
			}
			a.Release, a.Count = kept, len(kept)
		case DeleteENI:
			if held := heldOnENI(a, snap, routed); len(held) > 0 {
				holds = append(holds, holdsOf(held, a.ENIID, DeleteENI)...)
				continue
			}
		}
		out = append(out, a)
	}
	return out, holds
}

// BlockHold is a block kept because routed addresses are in it.
type BlockHold struct {
	Block  netip.Prefix
	Routed []RoutedAddr
}

// GuardBlocks splits blocks (IPv4 /32s and /28s, or IPv6 /128s and /80s)
// into those no running pod uses and those holding a routed address.
func GuardBlocks(blocks []netip.Prefix, routed []RoutedAddr) (kept []netip.Prefix, held []BlockHold) {
	for _, b := range blocks {
		if in := routedIn(b, routed); len(in) > 0 {
			held = append(held, BlockHold{Block: b, Routed: in})
			continue
		}
		kept = append(kept, b)
	}
	return kept, held
}

// heldOnENI is GuardBlocks's held for every block of a's ENI: those the
// snapshot gives it and those the action names.
func heldOnENI(a Action, snap Snapshot, routed []RoutedAddr) []BlockHold {
	blocks := slices.Clone(a.Release)
	for _, e := range snap.ENIs {
		if e.ID != a.ENIID {
			continue
		}
		for _, b := range e.Blocks {
			if !slices.Contains(blocks, b.CIDR) {
				blocks = append(blocks, b.CIDR)
			}
		}
	}
	_, held := GuardBlocks(blocks, routed)
	return held
}

func routedIn(b netip.Prefix, routed []RoutedAddr) []RoutedAddr {
	var out []RoutedAddr
	for _, r := range routed {
		if b.Contains(r.IP) {
			out = append(out, r)
		}
	}
	return out
}

func holdsOf(held []BlockHold, eniID string, kind ActionKind) []Hold {
	var out []Hold
	for _, h := range held {
		for _, r := range h.Routed {
			out = append(out, Hold{IP: r.IP, Veth: r.Veth, ENIID: eniID, Block: h.Block, Kind: kind})
		}
	}
	return out
}

// Releases reports whether an action gives anything back to EC2.
func Releases(a Action) bool { return a.Kind == Unassign || a.Kind == DeleteENI }
