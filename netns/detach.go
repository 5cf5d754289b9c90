package netns

import (
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink"
)

// DetachPod is DEL's teardown: it removes, in the node namespace, what
// routes traffic to the pod and lets its address be used again (the host
// routes of its addresses and of its egress address, their neighbour
// entries on the host veths, the policy rules of an address not handed to another pod) and
// leaves the links. Deleting a veth waits for the kernel's unregister (an
// RCU grace period, about 20 ms); the runtime deletes the pod's namespace
// right after DEL, and the kernel destroys both ends with it. A namespace
// that lives on keeps a pair that routes nothing: the next ADD in it
// deletes an older pair of either name (makeVethPair), and gc removes a
// host veth whose namespace no path names any more (HostState.Orphans).
// The pod's namespace is not entered. It succeeds when any piece is gone.
func DetachPod(p Pod) error {
	p.IP = p.IP.Unmap()
	return withHost(func(h *netlink.Handle) error {
		for _, ip := range p.addrs() {
			if err := detachAddr(h, p.HostVeth, ip); err != nil {
				return err
			}
		}
		return detachEgress(h, p)
	})
}

// detachAddr removes ip's host route through veth (or through no link),
// its neighbour entry on veth, and, unless ip is routed through another
// link now, its rules.
func detachAddr(h *netlink.Handle, veth string, ip netip.Addr) error {
	reassigned, err := removeHostRoutes(h, ip, veth)
	if err != nil {
		return err
	}
	if err := deleteNeighbour(h, veth, ip); err != nil {
		return err
	}
	if reassigned {
		return nil
	}
	return deletePodRules(h, ip)
}

// detachEgress removes the host route and neighbour of the egress address
// through the egress veth (by either name a pod's may have had).
func detachEgress(h *netlink.Handle, p Pod) error {
	if p.Egress == nil || !p.Egress.IP.IsValid() {
		return nil
	}
	e := p.Egress.normal(p)
	if p.HostVeth == "" && p.Egress.HostVeth == "" {
		e.HostVeth = ""
	}
	if _, err := removeHostRoutes(h, e.IP, e.HostVeth); err != nil {
		return err
	}
	return deleteNeighbour(h, e.HostVeth, e.IP)
}

// deleteNeighbour removes ip's neighbour entry on the host veth: the
// permanent one SetupPod puts there for IPv6, the one the node learnt for
// IPv4. The veth outlives DEL until its namespace goes.
func deleteNeighbour(h *netlink.Handle, veth string, ip netip.Addr) error {
	if veth == "" {
		return nil
	}
	l, err := linkByName(h, veth)
	if err != nil || l == nil {
		return err
	}
	n := &netlink.Neigh{LinkIndex: l.Attrs().Index, Family: familyOf(ip), IP: ipOf(ip)}
	if err := h.NeighDel(n); err != nil && !isGone(err) {
		return fmt.Errorf("delete host neighbour %s dev %s: %w", ip, veth, err)
	}
	return nil
}
