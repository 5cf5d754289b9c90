package netns

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"vpc-cni/internal/testsupport/testenv"
)

func wirePod(t *testing.T, node ns.NetNS, p Pod) (w Wired) {
	t.Helper()
	inNS(t, node, func() (err error) {
		w, err = SetupPod(p)
		return err
	})
	return w
}

func TestPrivilegedSetupPodWiresPodsThatReachEachOtherAndTheNode(t *testing.T) {
	node := newNode(t)
	nsA, a := newPod(t, "a", "100.64.1.11", 0)
	nsB, b := newPod(t, "b", "100.64.1.12", 3)
	wA, wB := wirePod(t, node, a), wirePod(t, node, b)

	for _, c := range []struct {
		podNS ns.NetNS
		pod   Pod
		w     Wired
	}{{nsA, a, wA}, {nsB, b, wB}} {
		inNS(t, c.podNS, func() error { return podSideProblems(c.pod, c.w) })
		inNS(t, node, func() error { return hostSideProblems(c.pod, c.w) })
		inNS(t, node, func() error { return CheckPod(c.pod) })
	}

	paths := []struct {
		name string
		from ns.NetNS
		to   netip.Addr
	}{
		{"pod A to pod B", nsA, b.IP},
		{"pod B to pod A", nsB, a.IP},
		{"node to pod A", node, a.IP},
		{"node to pod B", node, b.IP},
		{"pod A to node", nsA, nodePrimaryIP},
	}
	for _, path := range paths {
		if err := ping(path.from, path.to); err != nil {
			t.Errorf("%s: %v", path.name, err)
		}
	}
}

// podSideProblems checks, from inside the pod netns, what SetupPod promised.
func podSideProblems(p Pod, w Wired) error {
	link, err := netlink.LinkByName(p.IfName)
	if err != nil {
		return err
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	at := link.Attrs()
	if link.Type() != "veth" || at.Flags&net.FlagUp == 0 || at.MTU != p.MTU {
		bad("pod link %s: type %s flags %v MTU %d", p.IfName, link.Type(), at.Flags, at.MTU)
	}
	if at.NumTxQueues != 1 || at.NumRxQueues != 1 {
		bad("pod link %s: %d tx and %d rx queues, want one each", p.IfName, at.NumTxQueues, at.NumRxQueues)
	}
	if at.Index != w.PodIfIndex || at.HardwareAddr.String() != w.PodMAC || w.PodIf != p.IfName {
		bad("Wired %+v does not describe pod link %d %s", w, at.Index, at.HardwareAddr)
	}
	addrs, err := netlink.AddrList(link, unix.AF_INET)
	if err != nil || len(addrs) != 1 || addrs[0].IPNet.String() != p.IP.String()+"/32" {
		bad("pod addresses %v (%v), want only %s/32", addrs, err, p.IP)
	}
	routes, err := netlink.RouteList(link, unix.AF_INET)
	if err != nil {
		return err
	}
	var linkRoute, defaultRoute int
	for _, r := range routes {
		if r.Dst != nil && r.Dst.String() == "169.254.1.1/32" && r.Scope == netlink.SCOPE_LINK {
			linkRoute++
		}
		if isDefault(r.Dst) && r.Gw.String() == "169.254.1.1" {
			defaultRoute++
		}
	}
	if linkRoute != 1 || defaultRoute != 1 {
		bad("pod routes %v: want one 169.254.1.1/32 scope link and one default via it", routes)
	}
	neighs, err := netlink.NeighList(at.Index, unix.AF_INET)
	if err != nil {
		return err
	}
	found := false
	for _, n := range neighs {
		found = found || (n.IP.String() == "169.254.1.1" && n.State == netlink.NUD_PERMANENT &&
			n.HardwareAddr.String() == w.HostMAC)
	}
	if !found {
		bad("pod neighbours %v: want 169.254.1.1 lladdr %s permanent", neighs, w.HostMAC)
	}
	return errors.Join(errs...)
}

// hostSideProblems checks, from inside the node netns, the host veth, route
// and rules.
func hostSideProblems(p Pod, w Wired) error {
	veth, err := netlink.LinkByName(p.HostVeth)
	if err != nil {
		return err
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	at := veth.Attrs()
	mac := at.HardwareAddr
	if veth.Type() != "veth" || at.Flags&net.FlagUp == 0 || at.MTU != p.MTU || mac.String() != w.HostMAC {
		bad("host veth %s: type %s flags %v MTU %d MAC %s", p.HostVeth, veth.Type(), at.Flags, at.MTU, mac)
	}
	if at.NumTxQueues != 1 || at.NumRxQueues != 1 {
		bad("host veth %s: %d tx and %d rx queues, want one each", p.HostVeth, at.NumTxQueues, at.NumRxQueues)
	}
	if mac[0]&0x02 == 0 || mac[0]&0x01 != 0 {
		bad("host veth MAC %s is not locally administered unicast", mac)
	}
	if addrs, _ := netlink.AddrList(veth, unix.AF_INET); len(addrs) != 0 {
		bad("host veth has IPv4 addresses %v", addrs)
	}
	routes, err := netlink.RouteList(veth, unix.AF_INET)
	if err != nil {
		return err
	}
	if len(routes) != 1 || routes[0].Dst.String() != p.IP.String()+"/32" || routes[0].Scope != netlink.SCOPE_LINK {
		bad("host routes via %s: %v, want only %s/32 scope link", p.HostVeth, routes, p.IP)
	}
	rules, err := netlink.RuleList(unix.AF_INET)
	if err != nil {
		return err
	}
	if n := countRules(rules, 512, "to", p.IP, unix.RT_TABLE_MAIN); n != 1 {
		bad("%d rules to %s lookup main prio 512, want 1", n, p.IP)
	}
	wantFrom := 1
	if p.Table == 0 || p.Table == unix.RT_TABLE_MAIN {
		wantFrom = 0
	}
	if n := countRules(rules, 1536, "from", p.IP, -1); n != wantFrom {
		bad("%d rules from %s prio 1536, want %d", n, p.IP, wantFrom)
	}
	if wantFrom == 1 && countRules(rules, 1536, "from", p.IP, p.Table) != 1 {
		bad("rule from %s prio 1536 does not look up table %d", p.IP, p.Table)
	}
	return errors.Join(errs...)
}

// countRules counts rules with this priority and /32 selector; table -1
// matches any table.
func countRules(rules []netlink.Rule, prio int, dir string, ip netip.Addr, table int) int {
	n := 0
	for _, r := range rules {
		sel, other := r.Src, r.Dst
		if dir == "to" {
			sel, other = r.Dst, r.Src
		}
		if r.Priority == prio && other == nil && sel != nil && sel.String() == ip.String()+"/32" &&
			(table == -1 || r.Table == table) {
			n++
		}
	}
	return n
}

func TestPrivilegedSetupPodAgainRecreatesThePairWithoutDuplicates(t *testing.T) {
	node := newNode(t)
	podNS, p := newPod(t, "again", "100.64.2.21", 5)
	first := wirePod(t, node, p)
	second := wirePod(t, node, p)
	if first.HostMAC == second.HostMAC {
		t.Errorf("host veth kept MAC %s: the pair was not recreated", first.HostMAC)
	}
	inNS(t, podNS, func() error { return podSideProblems(p, second) })
	inNS(t, node, func() error { return hostSideProblems(p, second) })
	if err := ping(node, p.IP); err != nil {
		t.Error(err)
	}
}

func TestPrivilegedSetupPodMovesTheFromRuleWhenTheTableChanges(t *testing.T) {
	node := newNode(t)
	podNS, p := newPod(t, "moves", "100.64.2.22", 3)
	for _, table := range []int{3, 4, 0, 254, 6} {
		p.Table = table
		w := wirePod(t, node, p)
		inNS(t, podNS, func() error { return podSideProblems(p, w) })
		inNS(t, node, func() error { return hostSideProblems(p, w) })
	}
}

func TestPrivilegedSetupPodReplacesAForeignVethOfThePodInterfaceName(t *testing.T) {
	node := newNode(t)
	podNS, p := newPod(t, "foreign", "100.64.2.23", 0)
	inNS(t, podNS, func() error {
		return netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: p.IfName, TxQLen: -1}, PeerName: "old"})
	})
	w := wirePod(t, node, p)
	inNS(t, podNS, func() error { return podSideProblems(p, w) })
}

// A link of the host veth's name that is not a veth is not the plugin's to
// remove: SetupPod fails naming it and leaves it.
func TestPrivilegedSetupPodLeavesAnotherKindOfLinkOfTheHostVethsName(t *testing.T) {
	node := newNode(t)
	_, p := newPod(t, "dummy", "100.64.2.24", 0)
	inNS(t, node, func() error {
		return netlink.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: p.HostVeth, TxQLen: -1}})
	})
	inNS(t, node, func() error {
		if _, err := SetupPod(p); err == nil || !strings.Contains(err.Error(), "not a veth") {
			t.Errorf("SetupPod with a bridge named %s: %v; want an error saying it is not a veth", p.HostVeth, err)
		}
		if l, err := netlink.LinkByName(p.HostVeth); err != nil || l.Type() != "bridge" {
			t.Errorf("the bridge %s: %v %v; want it left", p.HostVeth, l, err)
		}
		return nil
	})
}

func TestPrivilegedSetupPodRejectsBadInput(t *testing.T) {
	node := newNode(t) // a failed SetupPod cleans up: keep that off the real node
	ok := Pod{NetnsPath: "/nonexistent", IfName: "eth0", HostVeth: "eni0123456789a", IP: netip.MustParseAddr("100.64.0.5")}
	for name, mutate := range map[string]func(*Pod){
		"IPv6 address":       func(p *Pod) { p.IP = netip.MustParseAddr("fd00::5") },
		"no address":         func(p *Pod) { p.IP = netip.Addr{} },
		"long host veth":     func(p *Pod) { p.HostVeth = "eni0123456789abcdef" },
		"no pod interface":   func(p *Pod) { p.IfName = "" },
		"local table":        func(p *Pod) { p.Table = unix.RT_TABLE_LOCAL },
		"no netns path":      func(p *Pod) { p.NetnsPath = "" },
		"negative table":     func(p *Pod) { p.Table = -2 },
		"empty host veth":    func(p *Pod) { p.HostVeth = "" },
		"netns path missing": func(p *Pod) {},
	} {
		p := ok
		mutate(&p)
		inNS(t, node, func() error {
			if _, err := SetupPod(p); err == nil {
				t.Errorf("%s: SetupPod(%+v) succeeded", name, p)
			}
			return nil
		})
	}
}

func TestPrivilegedCheckPodNamesTheMissingPiece(t *testing.T) {
	node := newNode(t)
	podNS, p := newPod(t, "check", "100.64.3.31", 2)
	inPod := func(fn func(h *netlink.Handle, link netlink.Link) error) func() error {
		return func() error {
			h, err := netlink.NewHandleAt(vnetnsOf(podNS))
			if err != nil {
				return err
			}
			defer h.Close()
			link, err := h.LinkByName(p.IfName)
			if err != nil {
				return err
			}
			return fn(h, link)
		}
	}
	onHost := func(fn func(veth netlink.Link) error) func() error {
		return func() error {
			veth, err := netlink.LinkByName(p.HostVeth)
			if err != nil {
				return err
			}
			return fn(veth)
		}
	}
	gw := &net.IPNet{IP: net.IPv4(169, 254, 1, 1).To4(), Mask: net.CIDRMask(32, 32)}
	breakers := []struct {
		piece string
		do    func() error
	}{
		{"rule to 100.64.3.31 lookup main prio 512", func() error { return netlink.RuleDel(toPodRule(p.IP).netlinkRule()) }},
		{"rule from 100.64.3.31 lookup 2 prio 1536", func() error { return netlink.RuleDel(fromPodRule(p.IP, 2).netlinkRule()) }},
		{"host route 100.64.3.31/32", onHost(func(v netlink.Link) error {
			return netlink.RouteDel(&netlink.Route{LinkIndex: v.Attrs().Index, Dst: host32(p.IP), Scope: netlink.SCOPE_LINK})
		})},
		{"host veth " + p.HostVeth + ": down", onHost(netlink.LinkSetDown)},
		{"host veth " + p.HostVeth + ": missing", onHost(netlink.LinkDel)},
		{"pod interface eth0: MTU 1500", inPod(func(h *netlink.Handle, l netlink.Link) error { return h.LinkSetMTU(l, 1500) })},
		{"pod interface eth0: down", inPod(func(h *netlink.Handle, l netlink.Link) error { return h.LinkSetDown(l) })},
		{"pod address 100.64.3.31/32", inPod(func(h *netlink.Handle, l netlink.Link) error {
			return h.AddrDel(l, &netlink.Addr{IPNet: host32(p.IP)})
		})},
		{"pod route 169.254.1.1/32", inPod(func(h *netlink.Handle, l netlink.Link) error {
			return h.RouteDel(&netlink.Route{LinkIndex: l.Attrs().Index, Dst: gw, Scope: netlink.SCOPE_LINK})
		})},
		{"pod route default via 169.254.1.1", inPod(func(h *netlink.Handle, l netlink.Link) error {
			return h.RouteDel(&netlink.Route{LinkIndex: l.Attrs().Index, Gw: gw.IP})
		})},
		{"pod neighbour 169.254.1.1", inPod(func(h *netlink.Handle, l netlink.Link) error {
			return h.NeighDel(&netlink.Neigh{LinkIndex: l.Attrs().Index, IP: gw.IP, Family: unix.AF_INET})
		})},
		{"pod neighbour 169.254.1.1", inPod(func(h *netlink.Handle, l netlink.Link) error {
			mac := net.HardwareAddr{0x02, 0, 0, 0, 0, 1}
			return h.NeighSet(&netlink.Neigh{LinkIndex: l.Attrs().Index, IP: gw.IP, Family: unix.AF_INET,
				State: netlink.NUD_PERMANENT, HardwareAddr: mac})
		})},
	}
	for _, b := range breakers {
		t.Run(b.piece, func(t *testing.T) {
			wirePod(t, node, p) // also proves SetupPod repairs what the last case broke
			inNS(t, node, func() error { return CheckPod(p) })
			inNS(t, node, b.do)
			var err error
			inNS(t, node, func() error { err = CheckPod(p); return nil })
			var we *WiringError
			if !errors.As(err, &we) || !strings.Contains(err.Error(), b.piece) {
				t.Fatalf("CheckPod after breaking %q: %v", b.piece, err)
			}
		})
	}
}

func TestPrivilegedCheckPodFailsWhenTheNetnsIsGone(t *testing.T) {
	node := newNode(t)
	podNS, p := newPod(t, "gone", "100.64.3.32", 0)
	wirePod(t, node, p)
	testenv.DeleteNetNS(podNS)
	var err error
	inNS(t, node, func() error { err = CheckPod(p); return nil })
	if err == nil {
		t.Fatal("CheckPod succeeded for a deleted netns")
	}
}

// The ping helper must be able to fail: without the node's route to pod B,
// pod A's echo goes nowhere.
func TestPrivilegedPingFailsWithoutTheHostRoute(t *testing.T) {
	node := newNode(t)
	nsA, a := newPod(t, "a", "100.64.1.13", 0)
	_, b := newPod(t, "b", "100.64.1.14", 0)
	wirePod(t, node, a)
	wirePod(t, node, b)
	inNS(t, node, func() error {
		veth, err := netlink.LinkByName(b.HostVeth)
		if err != nil {
			return err
		}
		return netlink.RouteDel(&netlink.Route{LinkIndex: veth.Attrs().Index, Dst: host32(b.IP), Scope: netlink.SCOPE_LINK})
	})
	if err := ping(nsA, b.IP); err == nil {
		t.Fatal("ping reached pod B without a route to it")
	} else {
		t.Log(err)
	}
}
