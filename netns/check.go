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

// CheckPod verifies every piece SetupPod makes, in both families and on the
// egress interface when p has them, and returns a *WiringError for the first
// one missing or wrong (other errors mean it could not look).
func CheckPod(p Pod) error {
	if err := p.validate(); err != nil {
		return err
	}
	p.IP = p.IP.Unmap()
	if p.Egress != nil {
		e := p.Egress.normal(p)
		p.Egress = &e
	}
	return withHost(func(host *netlink.Handle) error {
		hostVeth, err := checkVeth(host, p.HostVeth, p.MTU, "host veth")
		if err != nil {
			return err
		}
		err = withPod(p.NetnsPath, func(pod *netlink.Handle, _ vnetns.NsHandle) error {
			if err := checkPodSide(pod, p, hostVeth); err != nil {
				return err
			}
			return checkEgress(host, pod, p)
		})
		if err != nil {
			return err
		}
		for _, ip := range p.addrs() {
			if err := checkHostSide(host, ip, p.TableFor(ip), p.HostVeth, hostVeth); err != nil {
				return err
			}
		}
		return nil
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

// checkPeer finds the pod end called name and checks it is hostVeth's peer.
func checkPeer(h *netlink.Handle, name string, mtu int, hostVeth netlink.Link) (netlink.Link, error) {
	link, err := checkVeth(h, name, mtu, "pod interface")
	if err != nil {
		return nil, err
	}
	if hostVeth.Attrs().ParentIndex != link.Attrs().Index {
		return nil, wrong("not the peer of host veth "+hostVeth.Attrs().Name, "pod interface %s", name)
	}
	return link, nil
}

func checkPodSide(h *netlink.Handle, p Pod, hostVeth netlink.Link) error {
	link, err := checkPeer(h, p.IfName, p.MTU, hostVeth)
	if err != nil {
		return err
	}
	mac := hostVeth.Attrs().HardwareAddr
	if p.IP.IsValid() {
		if err := checkGatewayed(h, link, hostNet(p.IP), PodGateway, mac); err != nil {
			return err
		}
	}
	if p.IP6.IsValid() {
		return checkGatewayed(h, link, hostNet(p.IP6), PodGateway6, mac)
	}
	return nil
}

// checkGatewayed checks one family of a pod interface: the address, the
// gateway's link route, the default route through it and the permanent
// neighbour gw → mac.
func checkGatewayed(h *netlink.Handle, link netlink.Link, addr *net.IPNet, gw netip.Addr, mac net.HardwareAddr) error {
	if err := checkPodAddr(h, link, addr); err != nil {
		return err
	}
	if err := checkPodRoutes(h, link, gw); err != nil {
		return err
	}
	return checkPodNeighbour(h, link, gw, mac)
}

// checkPodAddr finds want on link, usable (not tentative, DAD not failed).
func checkPodAddr(h *netlink.Handle, link netlink.Link, want *net.IPNet) error {
	ip, _ := netip.AddrFromSlice(want.IP)
	ip = ip.Unmap()
	addrs, err := dump(func() ([]netlink.Addr, error) { return h.AddrList(link, familyOf(ip)) })
	if err != nil {
		return fmt.Errorf("list pod addresses: %w", err)
	}
	name := link.Attrs().Name
	for _, a := range addrs {
		if a.IPNet.String() != want.String() {
			continue
		}
		if a.Flags&(unix.IFA_F_TENTATIVE|unix.IFA_F_DADFAILED) != 0 {
			return wrong(fmt.Sprintf("not usable (flags %#x: tentative or DAD failed)", a.Flags), "pod address %s dev %s", want, name)
		}
		return nil
	}
	return wrong("missing", "pod address %s dev %s", want, name)
}

func checkPodRoutes(h *netlink.Handle, link netlink.Link, gw netip.Addr) error {
	routes, err := dump(func() ([]netlink.Route, error) { return h.RouteList(link, familyOf(gw)) })
	if err != nil {
		return fmt.Errorf("list pod routes: %w", err)
	}
	var gwRoute, defRoute bool
	for _, r := range routes {
		switch {
		// IPv6 routes carry no scope.
		case isHost(r.Dst, gw) && (r.Scope == netlink.SCOPE_LINK || gw.Is6()) && r.Gw == nil:
			gwRoute = true
		case isDefault(r.Dst) && r.Gw.Equal(ipOf(gw)):
			defRoute = true
		}
	}
	name := link.Attrs().Name
	if !gwRoute {
		return wrong("missing", "pod route %s dev %s scope link", hostNet(gw), name)
	}
	if !defRoute {
		return wrong("missing", "pod route default via %s dev %s", gw, name)
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

func checkPodNeighbour(h *netlink.Handle, link netlink.Link, gw netip.Addr, mac net.HardwareAddr) error {
	neighs, err := dump(func() ([]netlink.Neigh, error) { return h.NeighList(link.Attrs().Index, familyOf(gw)) })
	if err != nil {
		return fmt.Errorf("list pod neighbours: %w", err)
	}
	piece := fmt.Sprintf("pod neighbour %s lladdr %s dev %s nud permanent", gw, mac, link.Attrs().Name)
	for _, n := range neighs {
		if !n.IP.Equal(ipOf(gw)) {
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

// checkHostSide checks the host route to ip through veth and ip's rules.
func checkHostSide(h *netlink.Handle, ip netip.Addr, table int, vethName string, veth netlink.Link) error {
	if err := checkHostRoute(h, ip, vethName, veth); err != nil {
		return err
	}
	return checkRules(h, ip, table)
}

func checkHostRoute(h *netlink.Handle, ip netip.Addr, vethName string, veth netlink.Link) error {
	routes, err := dump(func() ([]netlink.Route, error) { return h.RouteList(veth, familyOf(ip)) })
	if err != nil {
		return fmt.Errorf("list host routes: %w", err)
	}
	for _, r := range routes {
		if isHost(r.Dst, ip) && r.Table == MainTable && r.Gw == nil {
			return nil
		}
	}
	return wrong("missing", "host route %s dev %s scope link", hostNet(ip), vethName)
}

// CheckPodRules verifies the policy rules SetPodRules installs (vpc-cni as
// an IPAM delegate); the error names the missing rule.
func CheckPodRules(ip netip.Addr, table int) error {
	return withHost(func(h *netlink.Handle) error { return checkRules(h, ip.Unmap(), table) })
}

func checkRules(h *netlink.Handle, ip netip.Addr, table int) error {
	rules, err := listRulesOf(h, familyOf(ip))
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
