package netns

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// The egress interfaces, as the reference's egress-cni plugin names and
// addresses them. An IPv6 pod reaches IPv4 destinations through v4if0, with
// an address from EgressV4Range, SNATed by the node to its primary IPv4
// (ENABLE_V4_EGRESS); an IPv4 pod reaches IPv6 ones through v6if0, with an
// address from EgressV6Range, SNATed to the node's IPv6 (ENABLE_V6_EGRESS).
// The node's SNAT and the rejection of new connections into the ranges are
// hostnet's (Config.V4Egress, Config.V6Egress).
const (
	EgressV4IfName = "v4if0"
	EgressV6IfName = "v6if0"
)

var (
	EgressV4Range   = netip.MustParsePrefix("169.254.172.0/22")
	EgressV4Gateway = netip.MustParseAddr("169.254.172.1") // on every v4 egress host veth, /32 scope link
	EgressV6Range   = netip.MustParsePrefix("fd00::ac:0/118")
)

// Egress is a pod's egress interface: its address (from EgressV4Range for
// an IPv6-only pod, from EgressV6Range for an IPv4-only pod; the family
// picks v4if0 or v6if0) and the host end's name, EgressVethName(Pod.HostVeth)
// when empty.
type Egress struct {
	IP       netip.Addr
	HostVeth string
}

// EgressVethName is the host end of a pod's egress veth: "veth" (the
// reference's host-local veths are veth<random hex>) and the first 11 hex
// digits of sha1("<pod host veth>/egress"), so teardown finds it again
// without a record. docs/networking.md states this rule (a docs test).
func EgressVethName(podHostVeth string) string {
	sum := sha1.Sum([]byte(podHostVeth + "/egress"))
	return "veth" + hex.EncodeToString(sum[:])[:11]
}

// ifName is the pod end's name.
func (e Egress) ifName() string {
	if e.IP.Is4() {
		return EgressV4IfName
	}
	return EgressV6IfName
}

// normal fills the default host veth name.
func (e Egress) normal(p Pod) Egress {
	e.IP = e.IP.Unmap()
	if e.HostVeth == "" {
		e.HostVeth = EgressVethName(p.HostVeth)
	}
	return e
}

func (e *Egress) validate(p Pod) error {
	if e == nil {
		return nil
	}
	ip := e.IP.Unmap()
	switch {
	case ip.Is4() && (!EgressV4Range.Contains(ip) || ip == EgressV4Gateway || ip == EgressV4Range.Addr()):
		return fmt.Errorf("egress address %v is not a host of %s other than the gateway %s", ip, EgressV4Range, EgressV4Gateway)
	case ip.Is4() && (p.IP.IsValid() || !p.IP6.IsValid()):
		return fmt.Errorf("IPv4 egress (%s) is for IPv6-only pods", EgressV4IfName)
	case ip.Is6() && !EgressV6Range.Contains(ip):
		return fmt.Errorf("egress address %v is not in %s", ip, EgressV6Range)
	case ip.Is6() && (p.IP6.IsValid() || !p.IP.IsValid()):
		return fmt.Errorf("IPv6 egress (%s) is for IPv4-only pods", EgressV6IfName)
	case !ip.IsValid():
		return fmt.Errorf("egress interface without an address")
	case len(e.normal(p).HostVeth) > 15 || e.normal(p).HostVeth == p.HostVeth:
		return fmt.Errorf("egress host veth name %q must be 1-15 characters and not the pod's", e.HostVeth)
	}
	return nil
}

// setupEgress makes the egress veth pair and wires both ends; p.Egress is
// normalised.
func setupEgress(host, pod *netlink.Handle, podNS vnetns.NsHandle, p Pod) (*Wired, error) {
	e := *p.Egress
	pair := Pod{HostVeth: e.HostVeth, IfName: e.ifName(), MTU: p.MTU}
	hostVeth, podLink, err := makeVethPair(host, pod, podNS, pair)
	if err != nil {
		return nil, fmt.Errorf("egress: %w", err)
	}
	if err := pod.LinkSetUp(podLink); err != nil {
		return nil, fmt.Errorf("set pod %s up: %w", pair.IfName, err)
	}
	if e.IP.Is4() {
		err = setupEgressV4(host, pod, hostVeth, podLink, e.IP)
	} else {
		err = setupEgressV6(host, pod, hostVeth, podLink, p.NetnsPath, e.IP)
	}
	if err != nil {
		return nil, fmt.Errorf("egress %s: %w", pair.IfName, err)
	}
	return wired(pair, hostVeth, podLink), nil
}

// setupEgressV4 is the reference's v4if0: in the pod ip/22 (without the
// connected route), `169.254.172.1/32 dev v4if0 scope link src ip`,
// `169.254.172.0/22 via 169.254.172.1 src ip` and `default via
// 169.254.172.1`; on the host veth 169.254.172.1/32 scope link and `ip/32
// dev <veth> scope link`.
func setupEgressV4(host, pod *netlink.Handle, hostVeth, podLink netlink.Link, ip netip.Addr) error {
	idx, gw, src := podLink.Attrs().Index, ipOf(EgressV4Gateway), ipOf(ip)
	addr := &netlink.Addr{IPNet: prefixNet(netip.PrefixFrom(ip, EgressV4Range.Bits())), Flags: unix.IFA_F_NOPREFIXROUTE}
	if err := pod.AddrReplace(podLink, addr); err != nil {
		return fmt.Errorf("add %s to pod: %w", addr.IPNet, err)
	}
	routes := []*netlink.Route{
		{LinkIndex: idx, Dst: host32(EgressV4Gateway), Scope: netlink.SCOPE_LINK, Src: src},
		{LinkIndex: idx, Dst: prefixNet(EgressV4Range), Gw: gw, Src: src},
		{LinkIndex: idx, Gw: gw},
	}
	for _, r := range routes {
		if err := pod.RouteReplace(r); err != nil {
			return fmt.Errorf("add pod route %v via %v: %w", r.Dst, r.Gw, err)
		}
	}
	hostAddr := &netlink.Addr{IPNet: host32(EgressV4Gateway), Scope: int(netlink.SCOPE_LINK)}
	if err := host.AddrReplace(hostVeth, hostAddr); err != nil {
		return fmt.Errorf("add %s/32 to host veth: %w", EgressV4Gateway, err)
	}
	return hostRoute(host, hostVeth, ip)
}

// setupEgressV6 wires v6if0 like an IPv6 pod interface (address /128 nodad,
// gateway fe80::1 with a permanent neighbour) and routes ip/128 to it. The
// reference gives the address as a /118 and routes through the host veth's
// link-local address, which costs a DAD wait; the gateway is the same
// host either way.
func setupEgressV6(host, pod *netlink.Handle, hostVeth, podLink netlink.Link, netnsPath string, ip netip.Addr) error {
	if err := setupPodSide6(pod, podLink, netnsPath, ip, hostVeth.Attrs().HardwareAddr); err != nil {
		return err
	}
	if err := hostNeighbour6(host, hostVeth, ip, podLink.Attrs().HardwareAddr); err != nil {
		return err
	}
	if err := hostRoute(host, hostVeth, ip); err != nil {
		return err
	}
	return waitDeliverable(pod, ip)
}

func hostRoute(h *netlink.Handle, veth netlink.Link, ip netip.Addr) error {
	r := &netlink.Route{LinkIndex: veth.Attrs().Index, Dst: hostNet(ip), Scope: netlink.SCOPE_LINK, Table: MainTable}
	if err := h.RouteReplace(r); err != nil {
		return fmt.Errorf("add host route %s dev %s: %w", hostNet(ip), veth.Attrs().Name, err)
	}
	return nil
}

// removeEgress deletes both egress pairs a pod may have, whatever its
// configuration says now: the pod ends (taking their peers) while the netns
// exists, then the host end by name. Routes and the host address go with
// the links.
func removeEgress(netnsPath, podHostVeth string, e *Egress) error {
	for _, name := range []string{EgressV4IfName, EgressV6IfName} {
		if err := removePodIf(netnsPath, name); err != nil {
			return err
		}
	}
	names := map[string]bool{}
	if podHostVeth != "" {
		names[EgressVethName(podHostVeth)] = true
	}
	if e != nil && e.HostVeth != "" {
		names[e.HostVeth] = true
	}
	return withHost(func(h *netlink.Handle) error {
		for name := range names {
			if err := deleteVeth(h, name); err != nil {
				return err
			}
		}
		return nil
	})
}

// checkEgress verifies p's egress pair, when it has one: both ends, the pod
// end's address and routes, the host end's address (IPv4) and the host
// route.
func checkEgress(host, pod *netlink.Handle, p Pod) error {
	if p.Egress == nil {
		return nil
	}
	e := *p.Egress
	hostVeth, err := checkVeth(host, e.HostVeth, p.MTU, "egress host veth")
	if err != nil {
		return err
	}
	link, err := checkPeer(pod, e.ifName(), p.MTU, hostVeth)
	if err != nil {
		return err
	}
	if e.IP.Is6() {
		err = checkGatewayed(pod, link, hostNet(e.IP), PodGateway6, hostVeth.Attrs().HardwareAddr)
	} else {
		err = checkEgressV4(host, pod, hostVeth, link, e.IP)
	}
	if err != nil {
		return err
	}
	return checkHostRoute(host, e.IP, e.HostVeth, hostVeth)
}

func checkEgressV4(host, pod *netlink.Handle, hostVeth, link netlink.Link, ip netip.Addr) error {
	if err := checkPodAddr(pod, link, prefixNet(netip.PrefixFrom(ip, EgressV4Range.Bits()))); err != nil {
		return err
	}
	if err := checkPodRoutes(pod, link, EgressV4Gateway); err != nil {
		return err
	}
	addrs, err := dump(func() ([]netlink.Addr, error) { return host.AddrList(hostVeth, unix.AF_INET) })
	if err != nil {
		return fmt.Errorf("list egress host veth addresses: %w", err)
	}
	for _, a := range addrs {
		if is32(a.IPNet, EgressV4Gateway) {
			return nil
		}
	}
	return wrong("missing", "egress host address %s/32 dev %s scope link", EgressV4Gateway, hostVeth.Attrs().Name)
}
