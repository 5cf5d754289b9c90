package netns

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"vpc-cni/internal/testsupport/testenv"
)

// nodePrimaryIPv6 is the node's IPv6 on its primary "ENI" in IPv6 tests.
var nodePrimaryIPv6 = netip.MustParseAddr("fd00:64::10")

// newNode6 is newNode with IPv6 too: nodePrimaryIPv6/64 on eth0 and IPv6
// forwarding on, in the node netns the test made.
func newNode6(tb testing.TB) ns.NetNS {
	tb.Helper()
	node := newNode(tb)
	inNS(tb, node, func() error {
		if err := refuseOriginalNetNS(); err != nil {
			return err
		}
		eth0, err := netlink.LinkByName("eth0")
		if err != nil {
			return err
		}
		addr := &netlink.Addr{IPNet: &net.IPNet{IP: ipOf(nodePrimaryIPv6), Mask: net.CIDRMask(64, 128)},
			Flags: unix.IFA_F_NODAD}
		if err := netlink.AddrAdd(eth0, addr); err != nil {
			return err
		}
		return os.WriteFile("/proc/sys/net/ipv6/conf/all/forwarding", []byte("1"), 0o644)
	})
	return node
}

// newPod6 makes a pod netns and a Pod with IPv6 ip6 and, unless empty, IPv4 ip4.
func newPod6(tb testing.TB, name, ip4, ip6 string) (ns.NetNS, Pod) {
	tb.Helper()
	n, p := newPod(tb, name, "100.64.0.1", 0)
	p.IP = netip.Addr{}
	if ip4 != "" {
		p.IP = netip.MustParseAddr(ip4)
	}
	p.IP6 = netip.MustParseAddr(ip6)
	return n, p
}

// hostLinkLocal waits until the host veth has its link-local address (the
// kernel adds it when the link's carrier comes up) and returns it with its zone.
func hostLinkLocal(tb testing.TB, node ns.NetNS, veth string) (ll netip.Addr) {
	tb.Helper()
	inNS(tb, node, func() error {
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			l, err := netlink.LinkByName(veth)
			if err != nil {
				return err
			}
			addrs, err := netlink.AddrList(l, unix.AF_INET6)
			if err != nil {
				return err
			}
			for _, a := range addrs {
				if a.IP.IsLinkLocalUnicast() && a.Flags&unix.IFA_F_TENTATIVE == 0 {
					ll, _ = netip.AddrFromSlice(a.IP)
					ll = ll.WithZone(veth)
					return nil
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
		return fmt.Errorf("host veth %s has no usable link-local address", veth)
	})
	return ll
}

func TestPrivilegedSetupPodWiresIPv6AndDualStackPods(t *testing.T) {
	node := newNode6(t)
	nsA, a := newPod6(t, "v6a", "", "fd00:1::a")
	nsB, b := newPod6(t, "v6b", "100.64.1.12", "fd00:1::b")
	wA, wB := wirePod(t, node, a), wirePod(t, node, b)

	for _, c := range []struct {
		podNS ns.NetNS
		pod   Pod
		w     Wired
	}{{nsA, a, wA}, {nsB, b, wB}} {
		inNS(t, c.podNS, func() error { return podSide6Problems(c.pod, c.w) })
		inNS(t, node, func() error { return hostSide6Problems(c.pod) })
		inNS(t, node, func() error { return CheckPod(c.pod) })
	}
	// The pod's side of the node: its host veth's link-local address, as
	// seen from the pod (same link, so the zone is the pod's interface).
	llA := hostLinkLocal(t, node, a.HostVeth).WithZone(a.IfName)
	paths := []struct {
		name string
		from ns.NetNS
		to   netip.Addr
	}{
		{"pod A to its host veth", nsA, llA},
		{"pod A to the node", nsA, nodePrimaryIPv6},
		{"pod A to pod B", nsA, b.IP6},
		{"pod B to pod A", nsB, a.IP6},
		{"node to pod A", node, a.IP6},
		{"pod B to the node over IPv4", nsB, nodePrimaryIP},
		{"node to pod B over IPv4", node, b.IP},
	}
	for _, path := range paths {
		if err := ping(path.from, path.to); err != nil {
			t.Errorf("%s: %v", path.name, err)
		}
	}
}

// podSide6Problems checks, inside the pod netns, the IPv6 half of SetupPod's promise.
func podSide6Problems(p Pod, w Wired) error {
	link, err := netlink.LinkByName(p.IfName)
	if err != nil {
		return err
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	addrs, err := netlink.AddrList(link, unix.AF_INET6)
	if err != nil {
		return err
	}
	var global []string
	for _, a := range addrs {
		if !a.IP.IsLinkLocalUnicast() {
			global = append(global, a.IPNet.String())
			if a.Flags&unix.IFA_F_TENTATIVE != 0 {
				bad("pod address %s is tentative right after SetupPod", a.IPNet)
			}
		}
	}
	if want := []string{p.IP6.String() + "/128"}; !reflect.DeepEqual(global, want) {
		bad("pod IPv6 addresses %v, want %v", global, want)
	}
	if !hasLocalRoute(p.IP6) {
		bad("pod address %s has no local route: packets to it are not delivered yet", p.IP6)
	}
	routes, err := netlink.RouteList(link, unix.AF_INET6)
	if err != nil {
		return err
	}
	var gwRoute, defRoute int
	for _, r := range routes {
		if r.Dst != nil && r.Dst.String() == "fe80::1/128" {
			gwRoute++
		}
		if isDefault(r.Dst) && r.Gw.String() == "fe80::1" {
			defRoute++
		}
	}
	if gwRoute != 1 || defRoute != 1 {
		bad("pod IPv6 routes %v: want one fe80::1/128 dev %s and one default via fe80::1", routes, p.IfName)
	}
	neighs, err := netlink.NeighList(link.Attrs().Index, unix.AF_INET6)
	if err != nil {
		return err
	}
	found := false
	for _, n := range neighs {
		found = found || (n.IP.String() == "fe80::1" && n.State == netlink.NUD_PERMANENT && n.HardwareAddr.String() == w.HostMAC)
	}
	if !found {
		bad("pod IPv6 neighbours %v: want fe80::1 lladdr %s permanent", neighs, w.HostMAC)
	}
	return errors.Join(errs...)
}

// hostSide6Problems checks, in the node netns, the host veth's IPv6
// sysctls, the /128 route and the prio 512 rule.
func hostSide6Problems(p Pod) error {
	var errs []error
	for _, s := range hostVethIPv6Sysctls {
		b, err := os.ReadFile("/proc/sys/net/ipv6/conf/" + p.HostVeth + "/" + s.key)
		if err != nil || string(b) != s.value+"\n" {
			errs = append(errs, fmt.Errorf("host veth %s: %s = %q (%v), want %s", p.HostVeth, s.key, b, err, s.value))
		}
	}
	veth, err := netlink.LinkByName(p.HostVeth)
	if err != nil {
		return err
	}
	routes, err := netlink.RouteList(veth, unix.AF_INET6)
	if err != nil {
		return err
	}
	if n := countRoutesTo(routes, p.IP6); n != 1 {
		errs = append(errs, fmt.Errorf("host IPv6 routes %v: want one %s/128", routes, p.IP6))
	}
	rules, err := netlink.RuleList(unix.AF_INET6)
	if err != nil {
		return err
	}
	if n := countSelected(rules, toPodRule(p.IP6)); n != 1 {
		errs = append(errs, fmt.Errorf("%d rules to %s prio 512, want 1", n, p.IP6))
	}
	return errors.Join(errs...)
}

func countRoutesTo(routes []netlink.Route, ip netip.Addr) int {
	n := 0
	for _, r := range routes {
		if isHost(r.Dst, ip) {
			n++
		}
	}
	return n
}

// leftovers6 lists, in the node netns, every IPv6 rule, route, neighbour and
// host veth a pod of ip6 may have left.
func leftovers6(ip6 netip.Addr, veths ...string) error {
	var errs []error
	rules, err := netlink.RuleList(unix.AF_INET6)
	if err != nil {
		return err
	}
	for _, r := range rules {
		if isHost(r.Dst, ip6) || isHost(r.Src, ip6) {
			errs = append(errs, fmt.Errorf("rule left: %s", describeRule(r)))
		}
	}
	routes, err := netlink.RouteListFiltered(unix.AF_INET6, &netlink.Route{Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE)
	if err != nil {
		return err
	}
	if n := countRoutesTo(routes, ip6); n > 0 {
		errs = append(errs, fmt.Errorf("%d routes to %s left", n, ip6))
	}
	neighs, err := netlink.NeighList(0, unix.AF_INET6)
	if err != nil {
		return err
	}
	for _, n := range neighs {
		if n.IP.Equal(ipOf(ip6)) {
			errs = append(errs, fmt.Errorf("neighbour left: %s lladdr %s on link %d", n.IP, n.HardwareAddr, n.LinkIndex))
		}
	}
	for _, v := range veths {
		if _, err := netlink.LinkByName(v); err == nil {
			errs = append(errs, fmt.Errorf("link %s left", v))
		}
	}
	return errors.Join(errs...)
}

func TestPrivilegedTeardownPodRemovesIPv6AndDualStackWiring(t *testing.T) {
	for _, c := range []struct {
		name, ip4, egress string
		deleteNetns       bool
	}{
		{"IPv6 only", "", "", false},
		{"dual-stack", "100.64.4.42", "", false},
		{"IPv6 with v4if0", "", "169.254.172.42", false},
		{"IPv6 with v4if0, netns deleted first", "", "169.254.172.42", true},
		{"dual-stack, netns deleted first", "100.64.4.42", "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			node := newNode6(t)
			podNS, p := newPod6(t, "down6", c.ip4, "fd00:4::42")
			if c.egress != "" {
				p.Egress = &Egress{IP: netip.MustParseAddr(c.egress)}
			}
			wirePod(t, node, p)
			if c.deleteNetns {
				testenv.DeleteNetNS(podNS)
			}
			teardown(t, node, p)
			teardown(t, node, p)
			inNS(t, node, func() error { return leftovers6(p.IP6, p.HostVeth, EgressVethName(p.HostVeth)) })
			if st := listHost(t, node); !reflect.DeepEqual(st, HostState{}) {
				t.Errorf("left on the node: %+v", st)
			}
			if c.deleteNetns {
				return
			}
			inNS(t, podNS, func() error {
				for _, name := range []string{p.IfName, EgressV4IfName} {
					if _, err := netlink.LinkByName(name); err == nil {
						t.Errorf("pod interface %s still there", name)
					}
				}
				return nil
			})
		})
	}
}

func TestPrivilegedCheckPodNamesTheMissingIPv6Piece(t *testing.T) {
	node := newNode6(t)
	podNS, p := newPod6(t, "chk6", "100.64.5.1", "fd00:5::1")
	wirePod(t, node, p)
	inNS(t, podNS, func() error {
		link, err := netlink.LinkByName(p.IfName)
		if err != nil {
			return err
		}
		return netlink.NeighDel(&netlink.Neigh{LinkIndex: link.Attrs().Index, Family: unix.AF_INET6, IP: ipOf(PodGateway6)})
	})
	var werr *WiringError
	inNS(t, node, func() error {
		err := CheckPod(p)
		if !errors.As(err, &werr) {
			return fmt.Errorf("CheckPod after deleting the IPv6 neighbour: %v, want a WiringError", err)
		}
		return nil
	})
	if want := "pod neighbour fe80::1"; len(werr.Piece) < len(want) || werr.Piece[:len(want)] != want {
		t.Errorf("CheckPod named %q, want the IPv6 neighbour", werr.Piece)
	}
	wirePod(t, node, p) // ADD again repairs
	inNS(t, node, func() error { return CheckPod(p) })
	inNS(t, node, func() error {
		return netlink.RuleDel(toPodRule(p.IP6).netlinkRule())
	})
	inNS(t, node, func() error {
		if err := CheckPod(p); !errors.As(err, &werr) || werr.Piece != toPodRule(p.IP6).String() {
			return fmt.Errorf("CheckPod after deleting the IPv6 rule: %v", err)
		}
		return nil
	})
}

func TestPrivilegedSetupPodEnablesIPv6WhereTheNamespaceDisabledIt(t *testing.T) {
	node := newNode6(t)
	podNS, p := newPod6(t, "dis6", "", "fd00:6::1")
	inNS(t, podNS, func() error {
		return os.WriteFile("/proc/sys/net/ipv6/conf/default/disable_ipv6", []byte("1"), 0o644)
	})
	wirePod(t, node, p)
	inNS(t, node, func() error { return CheckPod(p) })
	if err := ping(podNS, nodePrimaryIPv6); err != nil {
		t.Error(err)
	}
}

func TestPrivilegedPodValidateRefusesBadAddresses(t *testing.T) {
	_, p := newPod6(t, "bad", "", "fd00:7::1")
	cases := map[string]func(p *Pod){
		"no address":               func(p *Pod) { p.IP6 = netip.Addr{} },
		"IPv4 in IP6":              func(p *Pod) { p.IP6 = netip.MustParseAddr("100.64.0.1") },
		"IPv6 in IP":               func(p *Pod) { p.IP = netip.MustParseAddr("fd00::1") },
		"v4 egress outside range":  func(p *Pod) { p.Egress = &Egress{IP: netip.MustParseAddr("169.254.176.2")} },
		"v4 egress is the gateway": func(p *Pod) { p.Egress = &Egress{IP: EgressV4Gateway} },
		"v4 egress on an IPv4 pod": func(p *Pod) {
			p.IP = netip.MustParseAddr("100.64.0.2")
			p.Egress = &Egress{IP: netip.MustParseAddr("169.254.172.2")}
		},
		"v6 egress on an IPv6 pod": func(p *Pod) { p.Egress = &Egress{IP: netip.MustParseAddr("fd00::ac:2")} },
	}
	for name, mutate := range cases {
		q := p
		mutate(&q)
		if err := q.validate(); err == nil {
			t.Errorf("%s: accepted %+v", name, q)
		}
	}
	if err := p.validate(); err != nil {
		t.Errorf("an IPv6-only pod refused: %v", err)
	}
}

func TestPrivilegedEgressInterfaceIsWiredCheckedAndRemoved(t *testing.T) {
	for _, c := range []struct{ name, ip4, ip6, egress, gw string }{
		{"v4if0", "", "fd00:9::1", "169.254.172.9", "169.254.172.1"},
		{"v6if0", "100.64.9.1", "", "fd00::ac:9", "fe80::1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			node := newNode6(t)
			podNS, p := newPod(t, "egress", "100.64.0.1", 0)
			p.IP, p.IP6 = parseOrZero(c.ip4), parseOrZero(c.ip6)
			p.Egress = &Egress{IP: netip.MustParseAddr(c.egress)}
			w := wirePod(t, node, p)
			if w.Egress == nil || w.Egress.PodIf != c.name || w.Egress.HostVeth != EgressVethName(p.HostVeth) {
				t.Fatalf("Wired.Egress = %+v", w.Egress)
			}
			inNS(t, node, func() error { return CheckPod(p) })
			inNS(t, podNS, func() error {
				link, err := netlink.LinkByName(c.name)
				if err != nil {
					return err
				}
				gw := netip.MustParseAddr(c.gw)
				return netlink.RouteDel(&netlink.Route{LinkIndex: link.Attrs().Index, Gw: ipOf(gw),
					Dst: &net.IPNet{IP: ipOf(gw.Unmap()).Mask(net.CIDRMask(0, gw.BitLen())), Mask: net.CIDRMask(0, gw.BitLen())}})
			})
			var werr *WiringError
			inNS(t, node, func() error {
				if err := CheckPod(p); !errors.As(err, &werr) || werr.Piece != "pod route default via "+c.gw+" dev "+c.name {
					return fmt.Errorf("CheckPod with the egress default route gone: %v", err)
				}
				return nil
			})
			teardown(t, node, p)
			teardown(t, node, p)
			inNS(t, node, func() error { return egressLeftovers(p) })
			inNS(t, podNS, func() error {
				if _, err := netlink.LinkByName(c.name); err == nil {
					return fmt.Errorf("%s left in the pod", c.name)
				}
				return nil
			})
		})
	}
}

// egressLeftovers lists an egress host veth or route to the egress address
// left in the node netns.
func egressLeftovers(p Pod) error {
	if _, err := netlink.LinkByName(EgressVethName(p.HostVeth)); err == nil {
		return fmt.Errorf("egress host veth left")
	}
	routes, err := netlink.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE)
	if err != nil {
		return err
	}
	if n := countRoutesTo(routes, p.Egress.IP); n > 0 {
		return fmt.Errorf("%d routes to %s left", n, p.Egress.IP)
	}
	return nil
}

// A dual-stack pod whose IPv4 is on a secondary ENI: the IPv4 gets the
// ENI's from-rule, the IPv6 (the primary ENI's /80) none, so its replies
// use main rather than a table that holds no IPv6 route.
func TestPrivilegedDualStackOnASecondaryENIRoutesIPv6ByMain(t *testing.T) {
	node := newNode6(t)
	_, p := newPod6(t, "v6sec", "100.64.1.13", "fd00:1::c")
	p.Table = RouteTable(1)
	wirePod(t, node, p)
	inNS(t, node, func() error {
		v4, err := netlink.RuleList(unix.AF_INET)
		if err != nil {
			return err
		}
		v6, err := netlink.RuleList(unix.AF_INET6)
		if err != nil {
			return err
		}
		if n := countRules(v4, PrioFromPod, "from", p.IP, p.Table); n != 1 {
			t.Errorf("%d rules from %s lookup %d, want 1", n, p.IP, p.Table)
		}
		for _, r := range v6 {
			if r.Priority == PrioFromPod && r.Src != nil && r.Src.IP.Equal(p.IP6.AsSlice()) {
				t.Errorf("IPv6 rule %v: the /128 of the primary ENI's /80 must not look up an ENI table", r)
			}
		}
		return CheckPod(p)
	})
}
