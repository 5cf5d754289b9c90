package netns

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// WiringError says which piece of a pod's wiring CheckPod found missing or
// wrong; Piece reads like the `ip` command that would show it.
type WiringError struct {
	Piece   string
	Problem string
}

func (e *WiringError) Error() string { return e.Piece + ": " + e.Problem }

func wrong(problem, format string, args ...any) error {
	return &WiringError{Piece: fmt.Sprintf(format, args...), Problem: problem}
}

// CheckPod verifies every piece SetupPod makes and returns a *WiringError for
// the first one missing or wrong (other errors mean it could not look).
func CheckPod(p Pod) error {
	if err := p.validate(); err != nil {
		return err
	}
	p.IP = p.IP.Unmap()
	return withHost(func(host *netlink.Handle) error {
		hostVeth, err := checkVeth(host, p.HostVeth, p.MTU, "host veth")
		if err != nil {
			return err
		}
		err = withPod(p.NetnsPath, func(pod *netlink.Handle, _ vnetns.NsHandle) error {
			return checkPodSide(pod, p, hostVeth)
		})
		if err != nil {
			return err
		}
		return checkHostSide(host, p, hostVeth)
	})
}

// checkVeth finds a veth by name, up, with the expected MTU.
func checkVeth(h *netlink.Handle, name string, mtu int, what string) (netlink.Link, error) {
	l, err := linkByName(h, name)
	switch {
	case err != nil:
		return nil, fmt.Errorf("look up %s %s: %w", what, name, err)
	case l == nil:
		return nil, wrong("missing", "%s %s", what, name)
	case l.Type() != "veth":
		return nil, wrong("is a "+l.Type()+", not a veth", "%s %s", what, name)
	case l.Attrs().Flags&net.FlagUp == 0:
		return nil, wrong("down", "%s %s", what, name)
	case mtu > 0 && l.Attrs().MTU != mtu:
		return nil, wrong(fmt.Sprintf("MTU %d, want %d", l.Attrs().MTU, mtu), "%s %s", what, name)
	}
	return l, nil
}

func checkPodSide(h *netlink.Handle, p Pod, hostVeth netlink.Link) error {
	link, err := checkVeth(h, p.IfName, p.MTU, "pod interface")
	if err != nil {
		return err
	}
	if hostVeth.Attrs().ParentIndex != link.Attrs().Index {
		return wrong("not the peer of host veth "+p.HostVeth, "pod interface %s", p.IfName)
	}
	if err := checkPodAddr(h, link, p); err != nil {
		return err
	}
	if err := checkPodRoutes(h, link, p); err != nil {
		return err
	}
	return checkPodNeighbour(h, link, p, hostVeth.Attrs().HardwareAddr)
}

func checkPodAddr(h *netlink.Handle, link netlink.Link, p Pod) error {
	addrs, err := dump(func() ([]netlink.Addr, error) { return h.AddrList(link, unix.AF_INET) })
	if err != nil {
		return fmt.Errorf("list pod addresses: %w", err)
	}
	for _, a := range addrs {
		if is32(a.IPNet, p.IP) {
			return nil
		}
	}
	return wrong("missing", "pod address %s/32 dev %s", p.IP, p.IfName)
}

func checkPodRoutes(h *netlink.Handle, link netlink.Link, p Pod) error {
	routes, err := dump(func() ([]netlink.Route, error) { return h.RouteList(link, unix.AF_INET) })
	if err != nil {
		return fmt.Errorf("list pod routes: %w", err)
	}
	var gwRoute, defRoute bool
	for _, r := range routes {
		switch {
		case is32(r.Dst, PodGateway) && r.Scope == netlink.SCOPE_LINK && r.Gw == nil:
			gwRoute = true
		case isDefault(r.Dst) && r.Gw.Equal(ipOf(PodGateway)):
			defRoute = true
		}
	}
	if !gwRoute {
		return wrong("missing", "pod route %s/32 dev %s scope link", PodGateway, p.IfName)
	}
	if !defRoute {
		return wrong("missing", "pod route default via %s dev %s", PodGateway, p.IfName)
	}
	return nil
}

func isDefault(dst *net.IPNet) bool {
	if dst == nil {
		return true
	}
	ones, _ := dst.Mask.Size()
	return ones == 0
}

func checkPodNeighbour(h *netlink.Handle, link netlink.Link, p Pod, mac net.HardwareAddr) error {
	neighs, err := dump(func() ([]netlink.Neigh, error) { return h.NeighList(link.Attrs().Index, unix.AF_INET) })
	if err != nil {
		return fmt.Errorf("list pod neighbours: %w", err)
	}
	piece := fmt.Sprintf("pod neighbour %s lladdr %s dev %s nud permanent", PodGateway, mac, p.IfName)
	for _, n := range neighs {
		if !n.IP.Equal(ipOf(PodGateway)) {
			continue
		}
		if n.State&netlink.NUD_PERMANENT == 0 || !bytes.Equal(n.HardwareAddr, mac) {
			return &WiringError{Piece: piece, Problem: fmt.Sprintf("found lladdr %s state %#x",
				n.HardwareAddr, n.State)}
		}
		return nil
	}
	return &WiringError{Piece: piece, Problem: "missing"}
}

func checkHostSide(h *netlink.Handle, p Pod, veth netlink.Link) error {
	routes, err := dump(func() ([]netlink.Route, error) { return h.RouteList(veth, unix.AF_INET) })
	if err != nil {
		return fmt.Errorf("list host routes: %w", err)
	}
	found := false
	for _, r := range routes {
		found = found || (is32(r.Dst, p.IP) && r.Table == MainTable && r.Gw == nil)
	}
	if !found {
		return wrong("missing", "host route %s/32 dev %s scope link", p.IP, p.HostVeth)
	}
	return checkRules(h, p.IP, p.Table)
}

// CheckPodRules verifies the policy rules SetPodRules installs (vpc-cni as
// an IPAM delegate); the error names the missing rule.
func CheckPodRules(ip netip.Addr, table int) error {
	return withHost(func(h *netlink.Handle) error { return checkRules(h, ip.Unmap(), table) })
}

func checkRules(h *netlink.Handle, ip netip.Addr, table int) error {
	rules, err := listRules(h)
	if err != nil {
		return err
	}
	want := []ruleSpec{toPodRule(ip)}
	if !isMain(table) {
		want = append(want, fromPodRule(ip, table))
	}
	for _, s := range want {
		if !findRule(rules, s) {
			return wrong("missing", "%s", s)
		}
	}
	if isMain(table) && countSelected(rules, fromPodRule(ip, 0)) > 0 {
		return wrong("present, but the address is on the primary ENI", "rule from %s prio %d", ip, PrioFromPod)
	}
	return nil
}

func countSelected(rules []netlink.Rule, s ruleSpec) int {
	n := 0
	for _, r := range rules {
		if s.selects(r) {
			n++
		}
	}
	return n
}
