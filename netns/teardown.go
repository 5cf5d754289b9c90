package netns

import (
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
)

// TeardownPod removes what SetupPod made: the pod interface (if its netns
// still exists), the host veth (the pair goes together), the host routes
// and the pod's rules of both families, and any egress pair (v4if0 or
// v6if0, whether or not p.Egress says so). Addresses, pod routes and the
// pod's neighbours go with the interfaces. It succeeds when any of these,
// or the netns itself, is already gone. The pod end goes first so that a
// caller that lost the host veth's name still gets a clean node.
//
// A host veth of p's name that is another sandbox's (Pod.owns: the pod's
// newer sandbox, the name being the pod's) is left with its pairs and what
// routes through them; of p, only what no link holds goes: a host route
// through no link, the rules of an address no link routes.
func TeardownPod(p Pod) error {
	p.IP = p.IP.Unmap()
	other, err := anotherSandboxs(p)
	if err != nil {
		return err
	}
	if other {
		for _, ip := range p.addrs() {
			if err := RemoveLeftover("", ip); err != nil {
				return err
			}
		}
		return nil
	}
	if err := removePodIf(p.NetnsPath, p.IfName); err != nil {
		return err
	}
	if err := removeEgress(p.NetnsPath, p.HostVeth, p.Egress); err != nil {
		return err
	}
	if err := RemoveLeftover(p.HostVeth, p.IP); err != nil {
		return err
	}
	if !p.IP6.IsValid() {
		return nil
	}
	return RemoveLeftover("", p.IP6)
}

func removePodIf(netnsPath, ifName string) error {
	if ifName == "" || !NetnsExists(netnsPath) {
		return nil
	}
	err := withPod(netnsPath, func(pod *netlink.Handle, _ vnetns.NsHandle) error {
		return deleteVeth(pod, ifName)
	})
	if err != nil && NetnsExists(netnsPath) {
		return fmt.Errorf("remove pod interface %s: %w", ifName, err)
	}
	return nil
}

// RemoveLeftover removes, in the node netns, the host veth named veth (when
// not empty) and the routes and rules of ip (when valid, IPv4 or IPv6). The rules of an
// address that is still routed through another link are left alone: the
// address has been handed to another pod, and the rules are now its.
func RemoveLeftover(veth string, ip netip.Addr) error {
	ip = ip.Unmap()
	return withHost(func(h *netlink.Handle) error {
		if veth != "" {
			if err := deleteVeth(h, veth); err != nil {
				return err
			}
		}
		if !ip.IsValid() {
			return nil
		}
		reassigned, err := removeHostRoutes(h, ip, veth)
		if err != nil || reassigned {
			return err
		}
		return deletePodRules(h, ip)
	})
}

// removeHostRoutes deletes main-table routes to ip (/32 or /128) through the link named
// veth, or through no link any more; it reports whether one through another
// link remains.
func removeHostRoutes(h *netlink.Handle, ip netip.Addr, veth string) (reassigned bool, err error) {
	filter := &netlink.Route{Dst: hostNet(ip), Table: MainTable}
	routes, err := dump(func() ([]netlink.Route, error) {
		return h.RouteListFiltered(familyOf(ip), filter, netlink.RT_FILTER_DST|netlink.RT_FILTER_TABLE)
	})
	if err != nil {
		return false, fmt.Errorf("list host routes to %s: %w", ip, err)
	}
	for _, r := range routes {
		name := ""
		if l, err := h.LinkByIndex(r.LinkIndex); err == nil {
			name = l.Attrs().Name
		}
		if name != "" && name != veth {
			reassigned = true
			continue
		}
		if err := h.RouteDel(&r); err != nil && !isGone(err) {
			return false, fmt.Errorf("delete host route %s: %w", hostNet(ip), err)
		}
	}
	return reassigned, nil
}

// anotherSandboxs reports whether the node has a link of p's host veth name
// that is not p's sandbox's.
func anotherSandboxs(p Pod) (other bool, err error) {
	if p.HostVeth == "" {
		return false, nil
	}
	err = withHost(func(h *netlink.Handle) error {
		l, err := linkByName(h, p.HostVeth)
		if err == nil && l != nil {
			other = !p.owns(h, l)
		}
		return err
	})
	return other, err
}
