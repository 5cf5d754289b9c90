package netns

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink"
)

// ErrAddressInUse: the kernel routes the address to a live pod already.
var ErrAddressInUse = errors.New("address in use by a running pod")

// InUseError names the running pod's host veth that holds the address.
type InUseError struct {
	IP    netip.Addr
	Veth  string
	Netns string // a path to the running pod's namespace; "" if none was found
	// Sandbox is whose the veth is, as its alias says (zero: it does not).
	Sandbox Sandbox
}

func (e *InUseError) Error() string {
	return fmt.Sprintf("%s is routed to %s, a running pod's veth: %v", e.IP, e.Veth, ErrAddressInUse)
}

func (e *InUseError) Unwrap() error { return ErrAddressInUse }

// inUse is the point-of-use guard of SetupPod: whatever the store says, an
// address the node routes to another live pod (a veth whose peer is in a
// living namespace) is not wired again, which would move that pod's /32
// route to the new veth. One main-table read for the address's host route
// (/32 or /128) per address, and a link read when there is one.
func inUse(h *netlink.Handle, ip netip.Addr, ownVeth string) error {
	filter := &netlink.Route{Dst: hostNet(ip), Table: MainTable}
	routes, err := h.RouteListFiltered(familyOf(ip), filter, netlink.RT_FILTER_DST|netlink.RT_FILTER_TABLE)
	if err != nil {
		return fmt.Errorf("checking who holds %s: %w", ip, err)
	}
	for _, r := range routes {
		if r.Gw != nil || r.LinkIndex <= 0 {
			continue // via a gateway: not a pod's host route
		}
		l, err := h.LinkByIndex(r.LinkIndex)
		if err != nil {
			continue // the link went meanwhile: nobody holds it through it
		}
		if _, veth := l.(*netlink.Veth); veth && l.Attrs().Name != ownVeth && l.Attrs().NetNsID >= 0 {
			// The rare path: name the pod's namespace, so its DEL finds it.
			e := &InUseError{IP: ip, Veth: l.Attrs().Name, Netns: netnsByID(h)[l.Attrs().NetNsID]}
			e.Sandbox, _ = SandboxOf(l.Attrs().Alias)
			return e
		}
	}
	return nil
}
