package netns

import (
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"vpc-cni/internal/testsupport/testenv"
)

var testENI = ENIHost{
	MAC:        "02:42:ac:11:00:03",
	MTU:        9001,
	PrimaryIP:  netip.MustParseAddr("100.64.32.10"),
	SubnetCIDR: netip.MustParsePrefix("100.64.32.0/19"),
	Table:      3,
}

// attachENI gives the node a stand-in link with the ENI's MAC, as EC2 does
// on attach; before returns whatever set-up the case wants first.
func attachENI(t *testing.T, node ns.NetNS, e ENIHost, before func(netlink.Link) error) {
	t.Helper()
	vpc := testenv.NewNetNS(t)
	mac, err := net.ParseMAC(e.MAC)
	if err != nil {
		t.Fatal(err)
	}
	inNS(t, node, func() error {
		link, err := addENILink("ens6", mac, vpc)
		if err != nil || before == nil {
			return err
		}
		return before(link)
	})
}

func TestPrivilegedSetupENI(t *testing.T) {
	cases := map[string]func(netlink.Link) error{
		"fresh link": nil,
		"addresses left by DHCP, with the kernel's subnet route": func(l netlink.Link) error {
			// .5 comes first, so the kernel takes .10 for its secondary.
			for _, a := range []string{"100.64.32.5/19", "100.64.32.10/19", "100.64.32.99/19", "100.64.99.9/24"} {
				ipn, _ := netlink.ParseIPNet(a)
				if err := netlink.AddrAdd(l, &netlink.Addr{IPNet: ipn}); err != nil {
					return err
				}
			}
			return nil
		},
		"a stale rule to another table": func(netlink.Link) error {
			return netlink.RuleAdd(ruleSpec{PrioFromENI, false, testENI.PrimaryIP, 7}.netlinkRule())
		},
	}
	for name, before := range cases {
		t.Run(name, func(t *testing.T) {
			node := newNode(t)
			attachENI(t, node, testENI, before)
			for range 2 {
				inNS(t, node, func() error { return SetupENI(testENI) })
			}
			inNS(t, node, func() error { return eniProblems(t, testENI) })
		})
	}
}

// hostLinkByMAC is linkByMAC in the calling thread's namespace.
func hostLinkByMAC(mac string) (link netlink.Link, err error) {
	err = withHost(func(h *netlink.Handle) error {
		link, err = linkByMAC(h, mac)
		return err
	})
	return link, err
}

// eniProblems checks the node side of e from inside the node netns.
func eniProblems(t *testing.T, e ENIHost) error {
	link, err := hostLinkByMAC(strings.ToUpper(e.MAC))
	if err != nil {
		return err
	}
	at := link.Attrs()
	if at.MTU != e.MTU || at.Flags&net.FlagUp == 0 {
		t.Errorf("ENI link %s: MTU %d flags %v", at.Name, at.MTU, at.Flags)
	}
	addrs, err := netlink.AddrList(link, unix.AF_INET)
	if err != nil {
		return err
	}
	if len(addrs) != 1 || addrs[0].IPNet.String() != "100.64.32.10/19" {
		t.Errorf("ENI addresses %v, want only 100.64.32.10/19", addrs)
	}
	table, err := netlink.RouteListFiltered(unix.AF_INET, &netlink.Route{Table: e.Table}, netlink.RT_FILTER_TABLE)
	if err != nil {
		return err
	}
	var gwRoute, defRoute int
	for _, r := range table {
		if r.LinkIndex == at.Index && r.Dst.String() == "100.64.32.1/32" && r.Scope == netlink.SCOPE_LINK {
			gwRoute++
		}
		if r.LinkIndex == at.Index && isDefault(r.Dst) && r.Gw.String() == "100.64.32.1" {
			defRoute++
		}
	}
	if len(table) != 2 || gwRoute != 1 || defRoute != 1 {
		t.Errorf("table %d: %v, want 100.64.32.1/32 scope link and default via it, dev %s", e.Table, table, at.Name)
	}
	main, err := netlink.RouteList(link, unix.AF_INET)
	if err != nil {
		return err
	}
	if len(main) != 0 {
		t.Errorf("main table still routes through the ENI: %v", main)
	}
	rules, err := netlink.RuleList(unix.AF_INET)
	if err != nil {
		return err
	}
	if n := countRules(rules, PrioFromENI, "from", e.PrimaryIP, -1); n != 1 ||
		countRules(rules, PrioFromENI, "from", e.PrimaryIP, e.Table) != 1 {
		t.Errorf("%d rules from %s prio 32765, want one, lookup %d", n, e.PrimaryIP, e.Table)
	}
	return nil
}

// The point of the per-ENI tables: a pod on a secondary ENI leaves by that
// ENI, a pod on the primary leaves by the node's main route.
func TestPrivilegedPodsLeaveByTheirOwnENI(t *testing.T) {
	node := newNode(t)
	attachENI(t, node, testENI, nil)
	_, onPrimary := newPod(t, "primary", "100.64.0.20", 0)
	_, onSecondary := newPod(t, "secondary", "100.64.32.20", testENI.Table)
	inNS(t, node, func() error {
		eth0, err := netlink.LinkByName("eth0")
		if err != nil {
			return err
		}
		return netlink.RouteAdd(&netlink.Route{LinkIndex: eth0.Attrs().Index, Gw: net.IPv4(100, 64, 0, 1)})
	})
	inNS(t, node, func() error { return SetupENI(testENI) })
	wirePod(t, node, onPrimary)
	wirePod(t, node, onSecondary)
	internet := net.IPv4(198, 51, 100, 7)
	for _, c := range []struct {
		pod     Pod
		dev, gw string
	}{{onPrimary, "eth0", "100.64.0.1"}, {onSecondary, "ens6", "100.64.32.1"}} {
		inNS(t, node, func() error {
			routes, err := netlink.RouteGetWithOptions(internet, &netlink.RouteGetOptions{
				Iif: c.pod.HostVeth, SrcAddr: ipOf(c.pod.IP)})
			if err != nil {
				return err
			}
			dev, err := netlink.LinkByIndex(routes[0].LinkIndex)
			if err != nil {
				return err
			}
			if dev.Attrs().Name != c.dev || routes[0].Gw.String() != c.gw {
				t.Errorf("pod %s leaves by %s via %s, want %s via %s", c.pod.IP, dev.Attrs().Name, routes[0].Gw, c.dev, c.gw)
			}
			return nil
		})
	}
}

func TestPrivilegedTeardownENIIsIdempotent(t *testing.T) {
	node := newNode(t)
	attachENI(t, node, testENI, nil)
	inNS(t, node, func() error { return SetupENI(testENI) })
	for range 2 {
		inNS(t, node, func() error { return TeardownENI(testENI) })
	}
	inNS(t, node, func() error {
		table, err := netlink.RouteListFiltered(unix.AF_INET, &netlink.Route{Table: testENI.Table}, netlink.RT_FILTER_TABLE)
		if err != nil {
			return err
		}
		rules, err := netlink.RuleList(unix.AF_INET)
		if err != nil {
			return err
		}
		if len(table) != 0 || countRules(rules, PrioFromENI, "from", testENI.PrimaryIP, -1) != 0 {
			t.Errorf("after TeardownENI: table %d %v, rules %v", testENI.Table, table, rules)
		}
		if main, _ := netlink.RouteList(nil, unix.AF_INET); len(main) == 0 {
			t.Error("TeardownENI emptied the main table")
		}
		ens6, err := netlink.LinkByName("ens6")
		if err != nil {
			return err
		}
		return netlink.LinkDel(ens6)
	})
	inNS(t, node, func() error { return TeardownENI(testENI) }) // link detached
}

func TestPrivilegedLinkByMAC(t *testing.T) {
	node := newNode(t)
	attachENI(t, node, testENI, nil)
	inNS(t, node, func() error {
		if l, err := hostLinkByMAC(strings.ToUpper(testENI.MAC)); err != nil || l.Attrs().Name != "ens6" {
			t.Errorf("linkByMAC(%s) = %v, %v; want ens6", testENI.MAC, l, err)
		}
		if _, err := hostLinkByMAC("02:42:ac:11:00:04"); !errors.Is(err, ErrLinkNotReady) {
			t.Errorf("LinkByMAC of an absent MAC: %v, want ErrLinkNotReady", err)
		}
		if _, err := hostLinkByMAC("not-a-mac"); err == nil || errors.Is(err, ErrLinkNotReady) {
			t.Errorf("LinkByMAC of a malformed MAC: %v, want a parse error", err)
		}
		if err := SetupENI(ENIHost{MAC: "02:42:ac:11:00:04", PrimaryIP: testENI.PrimaryIP,
			SubnetCIDR: testENI.SubnetCIDR, Table: 4}); !errors.Is(err, ErrLinkNotReady) {
			t.Errorf("SetupENI of an absent ENI: %v, want ErrLinkNotReady", err)
		}
		return nil
	})
}

func TestPrivilegedSetupENIRejectsBadInput(t *testing.T) {
	node := newNode(t)
	for name, mutate := range map[string]func(*ENIHost){
		"primary outside subnet": func(e *ENIHost) { e.PrimaryIP = netip.MustParseAddr("100.64.64.1") },
		"IPv6 primary":           func(e *ENIHost) { e.PrimaryIP = netip.MustParseAddr("fd00::1") },
		"main table":             func(e *ENIHost) { e.Table = MainTable },
		"no table":               func(e *ENIHost) { e.Table = 0 },
		"local table":            func(e *ENIHost) { e.Table = unix.RT_TABLE_LOCAL },
	} {
		e := testENI
		mutate(&e)
		inNS(t, node, func() error {
			if err := SetupENI(e); err == nil || errors.Is(err, ErrLinkNotReady) {
				t.Errorf("%s: SetupENI(%+v) = %v, want a validation error", name, e, err)
			}
			return nil
		})
	}
}
