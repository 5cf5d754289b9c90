package hostnet

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/google/nftables"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"vpc-cni/internal/testsupport/testenv"
	"vpc-cni/netns"
)

// egressFamily is one egress mode under test: the pods' own family, the
// egress family, the node's and the far host's addresses in the latter.
type egressFamily struct {
	name          string
	nodeIP, farIP netip.Addr // the egress family's, on the node's eth0 and the far host
	farBits       int
	podA, podB    netns.Pod // wired into the node, each with an egress address
	egressRange   netip.Prefix
	configure     func(c *Config)
}

func egressFamilies() []egressFamily {
	v4 := egressFamily{
		name: "v4 egress for IPv6 pods", nodeIP: netip.MustParseAddr("100.64.0.10"), farIP: netip.MustParseAddr("100.64.0.1"),
		farBits: 24, egressRange: netns.EgressV4Range,
		podA: netns.Pod{IP6: netip.MustParseAddr("fd00:1::a"), Egress: &netns.Egress{IP: netip.MustParseAddr("169.254.172.10")}},
		podB: netns.Pod{IP6: netip.MustParseAddr("fd00:1::b"), Egress: &netns.Egress{IP: netip.MustParseAddr("169.254.172.11")}},
	}
	v4.configure = func(c *Config) { c.IPv6, c.V4EgressRange = true, netns.EgressV4Range }
	v6 := egressFamily{
		name: "v6 egress for IPv4 pods", nodeIP: netip.MustParseAddr("fd00:64::10"), farIP: netip.MustParseAddr("fd00:64::1"),
		farBits: 64, egressRange: netns.EgressV6Range,
		podA: netns.Pod{IP: netip.MustParseAddr("100.64.1.10"), Egress: &netns.Egress{IP: netip.MustParseAddr("fd00::ac:10")}},
		podB: netns.Pod{IP: netip.MustParseAddr("100.64.1.11"), Egress: &netns.Egress{IP: netip.MustParseAddr("fd00::ac:11")}},
	}
	v6.configure = func(c *Config) {
		c.V6EgressRange = netns.EgressV6Range
		c.PrimaryIPv6 = netip.MustParseAddr("fd00:64::10")
	}
	return []egressFamily{v4, v6}
}

// egressLab is a node netns whose eth0 leads to a far netns (a host outside
// the node, with a route to the egress range through the node), and two
// pod netns.
type egressLab struct {
	node, far, podA, podB ns.NetNS
}

func newEgressLab(t *testing.T, f *egressFamily) egressLab {
	t.Helper()
	lab := egressLab{testenv.NewNetNS(t), testenv.NewNetNS(t), testenv.NewNetNS(t), testenv.NewNetNS(t)}
	do(t, lab.node, func() error {
		veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "eth0"}, PeerName: "far0",
			PeerNamespace: netlink.NsFd(int(lab.far.Fd()))}
		if err := netlink.LinkAdd(veth); err != nil {
			return err
		}
		// Forwarding on, so that the control before Ensure sees a routed path.
		for _, p := range []string{"net/ipv4/ip_forward", "net/ipv6/conf/all/forwarding"} {
			if err := os.WriteFile("/proc/sys/"+p, []byte("1"), 0o644); err != nil {
				return err
			}
		}
		return linkUpWith("eth0", f.nodeIP, f.farBits)
	})
	do(t, lab.far, func() error {
		if err := linkUpWith("far0", f.farIP, f.farBits); err != nil {
			return err
		}
		_, dst, _ := net.ParseCIDR(f.egressRange.String())
		return netlink.RouteAdd(&netlink.Route{Dst: dst, Gw: net.IP(f.nodeIP.AsSlice())})
	})
	for i, p := range []*netns.Pod{&f.podA, &f.podB} {
		p.NetnsPath = []ns.NetNS{lab.podA, lab.podB}[i].Path()
		p.IfName, p.HostVeth, p.MTU = "eth0", netns.HostVethName("test", fmt.Sprint("egress", i)), 1500
		do(t, lab.node, func() error { _, err := netns.SetupPod(*p); return err })
		do(t, lab.node, func() error { return netns.CheckPod(*p) })
	}
	return lab
}

func do(t *testing.T, n ns.NetNS, fn func() error) {
	t.Helper()
	if err := n.Do(func(ns.NetNS) error { return fn() }); err != nil {
		t.Fatal(err)
	}
}

// linkUpWith puts ip/bits (no DAD) on the link and sets it up, with lo. The
// link's link-local address skips DAD too: a real primary ENI's has long
// been usable, and a tentative one delays neighbour solicitations by seconds.
func linkUpWith(name string, ip netip.Addr, bits int) error {
	if err := os.WriteFile("/proc/sys/net/ipv6/conf/"+name+"/accept_dad", []byte("0"), 0o644); err != nil {
		return err
	}
	for _, n := range []string{"lo", name} {
		l, err := netlink.LinkByName(n)
		if err != nil {
			return err
		}
		if err := netlink.LinkSetUp(l); err != nil {
			return err
		}
	}
	l, _ := netlink.LinkByName(name)
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: ip.AsSlice(), Mask: net.CIDRMask(bits, ip.BitLen())}, Flags: unix.IFA_F_NODAD}
	return netlink.AddrAdd(l, addr)
}

// udpSource sends one datagram from inside from to to:port and returns the
// source address to's listener saw.
func udpSource(t *testing.T, from, to ns.NetNS, toIP netip.Addr) netip.Addr {
	t.Helper()
	var conn *net.UDPConn
	do(t, to, func() (err error) {
		conn, err = net.ListenUDP("udp", &net.UDPAddr{IP: toIP.AsSlice(), Port: 7777})
		return err
	})
	defer conn.Close()
	do(t, from, func() error {
		c, err := net.Dial("udp", netip.AddrPortFrom(toIP, 7777).String())
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Write([]byte("egress"))
		return err
	})
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, src, err := conn.ReadFromUDPAddrPort(make([]byte, 64))
	if err != nil {
		t.Fatalf("no datagram reached %s: %v", toIP, err)
	}
	return src.Addr().Unmap()
}

// dialTCP connects from inside from to ip:8080, where a listener waits in in.
func dialTCP(t *testing.T, from, in ns.NetNS, ip netip.Addr) error {
	t.Helper()
	var ln net.Listener
	do(t, in, func() (err error) {
		ln, err = net.Listen("tcp", netip.AddrPortFrom(ip, 8080).String())
		return err
	})
	defer ln.Close()
	var dialErr error
	do(t, from, func() error {
		c, err := net.DialTimeout("tcp", netip.AddrPortFrom(ip, 8080).String(), 5*time.Second)
		if err == nil {
			c.Close()
		}
		dialErr = err
		return nil
	})
	return dialErr
}

func TestPrivilegedEgressIsSNATedAndClosedToNewConnections(t *testing.T) {
	for _, f := range egressFamilies() {
		t.Run(f.name, func(t *testing.T) {
			lab := newEgressLab(t, &f)
			a, b := f.podA.Egress.IP, f.podB.Egress.IP
			// Without vpc-cni's rules the egress addresses are open and not translated.
			if src := udpSource(t, lab.podA, lab.far, f.farIP); src != a {
				t.Fatalf("before the rules the far host saw %s, want the pod's %s", src, a)
			}
			if err := dialTCP(t, lab.far, lab.podA, a); err != nil {
				t.Fatalf("before the rules the far host could not reach %s: %v", a, err)
			}
			cfg := testConfig()
			cfg.PrimaryIP = netip.MustParseAddr("100.64.0.10")
			f.configure(&cfg)
			do(t, lab.node, func() error { _, err := Ensure(cfg); return err })
			if src := udpSource(t, lab.podA, lab.far, f.farIP); src != f.nodeIP {
				t.Errorf("the far host saw %s, want the node's %s", src, f.nodeIP)
			}
			do(t, lab.podA, func() error { _, err := netns.Ping(f.farIP, 3*time.Second); return err })
			if err := dialTCP(t, lab.far, lab.podA, a); !errors.Is(err, syscall.ECONNREFUSED) {
				t.Errorf("a new connection from the far host into %s: %v, want refused", a, err)
			}
			if err := dialTCP(t, lab.podB, lab.podA, a); !errors.Is(err, syscall.ECONNREFUSED) {
				t.Errorf("a new connection from pod B (%s) into %s: %v, want refused", b, a, err)
			}
			checkTeardownLeavesOnlyTheStaticRules(t, lab, f, cfg)
		})
	}
}

// checkTeardownLeavesOnlyTheStaticRules tears both pods down and checks
// that no egress link, address or route is left, and that the nftables
// tables are exactly what Ensure wrote (no per-pod element).
func checkTeardownLeavesOnlyTheStaticRules(t *testing.T, lab egressLab, f egressFamily, cfg Config) {
	t.Helper()
	do(t, lab.node, func() error {
		before := ruleComments(t)
		for _, p := range []netns.Pod{f.podA, f.podB} {
			if err := netns.TeardownPod(p); err != nil {
				return err
			}
		}
		if after := ruleComments(t); !slices.Equal(before, after) {
			t.Errorf("nftables rules changed by teardown: %v, then %v", before, after)
		}
		if st, err := Check(cfg); err != nil || !st.InPlace() {
			t.Errorf("after teardown: %+v, %v", st, err)
		}
		links, err := netlink.LinkList()
		if err != nil {
			return err
		}
		for _, l := range links {
			if n := l.Attrs().Name; strings.HasPrefix(n, "veth") || strings.HasPrefix(n, "eni") {
				t.Errorf("link %s left on the node", n)
			}
		}
		routes, err := netlink.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE)
		if err != nil {
			return err
		}
		for _, r := range routes {
			if r.Dst != nil && (f.egressRange.Contains(addrOf(r.Dst.IP)) || r.Dst.IP.Equal(f.podA.IP6.AsSlice())) {
				t.Errorf("route left on the node: %v", r)
			}
		}
		return nil
	})
	for _, n := range []ns.NetNS{lab.podA, lab.podB} {
		do(t, n, func() error {
			for _, name := range []string{netns.EgressV4IfName, netns.EgressV6IfName, "eth0"} {
				if _, err := netlink.LinkByName(name); err == nil {
					t.Errorf("pod interface %s left", name)
				}
			}
			return nil
		})
	}
}

func addrOf(ip net.IP) netip.Addr {
	a, _ := netip.AddrFromSlice(ip)
	return a.Unmap()
}

// ruleComments lists the comments of every rule of both our tables.
func ruleComments(t *testing.T) []string {
	t.Helper()
	c, _ := nftables.New()
	var out []string
	for _, family := range []nftables.TableFamily{nftables.TableFamilyIPv4, nftables.TableFamilyIPv6} {
		chains, err := c.ListChainsOfTableFamily(family)
		if err != nil {
			t.Fatal(err)
		}
		for _, ch := range chains {
			if ch.Table.Name != TableName {
				continue
			}
			rules, err := c.GetRules(ch.Table, ch)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rules {
				out = append(out, familyName(family)+" "+ch.Name+" "+comment(r))
			}
		}
	}
	slices.Sort(out)
	return out
}

func readSys(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/" + path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func TestPrivilegedIPv6NodeSettingsAreSetAndKept(t *testing.T) {
	inNode(t, func() {
		cfg := testConfig()
		cfg.IPv6 = true
		if st := mustCheck(t, cfg); st.InPlace() || len(st.Drift) == 0 {
			t.Fatalf("fresh namespace reported in place: %+v", st)
		}
		r := mustEnsure(t, cfg)
		for _, want := range []string{"net/ipv6/conf/all/forwarding=1", "net/ipv6/conf/eth0/accept_ra=2", "ip -6 rule fwmark prio 1024"} {
			if !slices.Contains(r, want) {
				t.Errorf("first Ensure repaired %v; want %q among them", r, want)
			}
		}
		if got := readSys(t, "net/ipv6/conf/all/forwarding") + readSys(t, "net/ipv6/conf/eth0/accept_ra"); got != "12" {
			t.Errorf("forwarding and accept_ra: %s, want 1 and 2", got)
		}
		if st := mustCheck(t, cfg); !st.InPlace() {
			t.Fatalf("after Ensure: %+v", st)
		}
		if r := mustEnsure(t, cfg); len(r) != 0 {
			t.Fatalf("second Ensure repaired %v; want nothing", r)
		}
		// Another program turns forwarding off and deletes the IPv6 rule.
		if err := os.WriteFile("/proc/sys/net/ipv6/conf/all/forwarding", []byte("0"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := netlink.RuleDel(fwmarkRuleOf(unix.AF_INET6, DefaultConnMark)); err != nil {
			t.Fatal(err)
		}
		if st := mustCheck(t, cfg); len(st.Drift) != 2 || st.InPlace() {
			t.Fatalf("after the drift: %+v; want forwarding and the rule named", st)
		}
		if r := mustEnsure(t, cfg); len(r) != 2 {
			t.Fatalf("Ensure after drift repaired %v; want forwarding and the rule", r)
		}
		if _, err := Remove(); err != nil {
			t.Fatal(err)
		}
		if rules, err := fwmarkRulesOf(unix.AF_INET6); err != nil || len(rules) != 0 {
			t.Fatalf("IPv6 fwmark rules left: %v, %v", rules, err)
		}
	})
}

func TestValidateRefusesEgressWithoutTheNodeAddress(t *testing.T) {
	cfg := testConfig()
	cfg.V6EgressRange = netns.EgressV6Range
	if err := cfg.Validate(); err == nil {
		t.Fatal("accepted IPv6 egress without the node's IPv6")
	}
	cfg = testConfig()
	cfg.V4EgressRange = netns.EgressV6Range
	if err := cfg.Validate(); err == nil {
		t.Fatal("accepted an IPv6 range for IPv4 egress")
	}
}
