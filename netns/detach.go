package netns

import (
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
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
//
// A Pod that names no address (a DEL that found no assignment and no
// prevResult: the state file lost the pod) is detached from what the
// kernel routes through its host veth and egress veth when they are its
// sandbox's (Pod.owns), not a newer sandbox's of the same pod.
// Left routed, it would count as a running pod for as long as its
// namespace lives, and its address would be held as an unknown pod's.
func DetachPod(p Pod) error {
	p.IP = p.IP.Unmap()
	return withHost(func(h *netlink.Handle) error {
		if len(p.addrs()) == 0 && p.Egress == nil {
			return detachRouted(h, p)
		}
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

// detachRouted detaches every address the main table routes through the
// pod's host veth (routes, neighbours, rules) and its egress veth (routes,
// neighbours) when the host veth is p's sandbox's.
func detachRouted(h *netlink.Handle, p Pod) error {
	if p.HostVeth == "" {
		return nil
	}
	l, err := linkByName(h, p.HostVeth)
	if err != nil || l == nil || !p.owns(h, l) {
		return err
	}
	ips, err := routedThrough(h, l)
	if err != nil {
		return err
	}
	for _, ip := range ips {
		if err := detachAddr(h, p.HostVeth, ip); err != nil {
			return err
		}
	}
	egress := EgressVethName(p.HostVeth)
	if ips, err = routedInto(h, egress, p.NetnsPath); err != nil {
		return err
	}
	for _, ip := range ips {
		if _, err := removeHostRoutes(h, ip, egress); err != nil {
			return err
		}
		if err := deleteNeighbour(h, egress, ip); err != nil {
			return err
		}
	}
	return nil
}

// routedInto lists the host addresses (/32, /128) the main table routes
// through the veth called name when its other end is in the namespace at
// netnsPath; none when the veth or the namespace is gone, or the veth leads
// elsewhere (or somewhere the kernel cannot name).
func routedInto(h *netlink.Handle, name, netnsPath string) ([]netip.Addr, error) {
	if netnsPath == "" {
		return nil, nil
	}
	l, err := linkByName(h, name)
	if err != nil || l == nil {
		return nil, err
	}
	if _, veth := l.(*netlink.Veth); !veth || l.Attrs().NetNsID < 0 || netnsID(h, netnsPath) != l.Attrs().NetNsID {
		return nil, nil
	}
	return routedThrough(h, l)
}

// routedThrough lists the host addresses (/32, /128) the main table routes
// through l.
func routedThrough(h *netlink.Handle, l netlink.Link) ([]netip.Addr, error) {
	var out []netip.Addr
	filter := &netlink.Route{LinkIndex: l.Attrs().Index, Table: MainTable}
	for _, family := range []int{unix.AF_INET, unix.AF_INET6} {
		routes, err := dump(func() ([]netlink.Route, error) {
			return h.RouteListFiltered(family, filter, netlink.RT_FILTER_OIF|netlink.RT_FILTER_TABLE)
		})
		if err != nil {
			return nil, fmt.Errorf("list routes through %s: %w", l.Attrs().Name, err)
		}
		for _, r := range routes {
			if ip, ok := addrOfHost(r.Dst); ok && r.Gw == nil {
				out = append(out, ip)
			}
		}
	}
	return out, nil
}

// netnsID is the id h's namespace gives the namespace at path; -1 when it
// has none or the path is not one.
func netnsID(h *netlink.Handle, path string) int {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	defer unix.Close(fd)
	id, err := h.GetNetNsIdByFd(fd)
	if err != nil {
		return -1
	}
	return id
}
