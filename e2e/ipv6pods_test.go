package e2e

import (
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/google/nftables"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"vpc-cni/hostnet"
	"vpc-cni/internal/testsupport/testenv"
	"vpc-cni/netns"
	"vpc-cni/store"
)

// The knobs of the two modes, in the configuration file as an operator
// writes them.
var (
	ipv6Env = []string{"ENABLE_IPv6=true", "ENABLE_IPv4=false", "ENABLE_PREFIX_DELEGATION=true"}
	dualEnv = []string{"ENABLE_IPv6=true", "ENABLE_IPv4=true", "WARM_IP_TARGET=4"}
)

// newVPCWorld6 is newVPCWorld in an IPv6 mode: the VPC routes IPv6, the
// node has its default IPv6 route through the subnet router (as the
// primary ENI's router advertisement gives it), and the VPC knows the /80
// the first pass assigned.
func newVPCWorld6(t *testing.T, env ...string) *vpcNet {
	t.Helper()
	v := newVPCWorld(t, env...)
	v.setupIPv6()
	v.w.inNode(func() error {
		if err := refuseOriginalNetNS(); err != nil {
			return err
		}
		eth0, err := netlink.LinkByName("eth0")
		if err != nil {
			return err
		}
		return netlink.RouteAdd(&netlink.Route{LinkIndex: eth0.Attrs().Index, Gw: ipOf(vpcRouter6),
			Dst: &net.IPNet{IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)}})
	})
	v.waitLinkLocal("eth0")
	v.syncVPC()
	return v
}

// waitLinkLocal waits until the node's link has a link-local address past
// duplicate address detection: until then the node cannot solicit the
// subnet router, and the first packets through it wait a retransmission.
func (v *vpcNet) waitLinkLocal(link string) {
	v.w.tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ready := false
		v.w.inNode(func() error {
			l, err := netlink.LinkByName(link)
			if err != nil {
				return err
			}
			addrs, err := netlink.AddrList(l, unix.AF_INET6)
			for _, a := range addrs {
				ready = ready || (a.IP.IsLinkLocalUnicast() && a.Flags&unix.IFA_F_TENTATIVE == 0)
			}
			return err
		})
		if ready {
			return
		}
		if time.Now().After(deadline) {
			v.w.tb.Fatalf("%s has no usable link-local address after 10s", link)
		}
		time.Sleep(20 * time.Millisecond) // polling the condition; the kernel sends no event we could wait on here
	}
}

// pod6 is one pod added through libcni, with the addresses its result gave.
type pod6 struct {
	*pod
	res      *current.Result
	ip4, ip6 netip.Addr
}

// addPod6 adds a pod through rt and reads its addresses from the result,
// checking that the store holds the same ones.
func (v *vpcNet) addPod6(t *testing.T, rt *runtime, name string) *pod6 {
	t.Helper()
	p := &pod6{pod: v.w.newPod(name)}
	var err error
	if p.res, err = rt.add(p.pod, nil); err != nil {
		t.Fatalf("ADD %s: %v", name, err)
	}
	for _, ipc := range p.res.IPs {
		ip := anyAddr(t, ipc.Address.IP)
		if ip.Is4() {
			p.ip4 = ip
		} else {
			p.ip6 = ip
		}
	}
	a, ok := v.w.assignmentsByKey()[p.id+"/"+p.ifname]
	if !ok || a.IP != p.ip4 || a.IPv6 != p.ip6 {
		t.Fatalf("store holds %+v for %s; the result has %s and %s", a, name, p.ip4, p.ip6)
	}
	return p
}

// anyAddr is the IPv4 or IPv6 address of ip.
func anyAddr(tb testing.TB, ip net.IP) netip.Addr {
	tb.Helper()
	a, ok := netip.AddrFromSlice(ip)
	if !ok {
		tb.Fatalf("not an IP address: %v", ip)
	}
	return a.Unmap()
}

// serve starts a whoami server in the pod on each of its addresses.
func (p *pod6) serve(t *testing.T, v *vpcNet) {
	t.Helper()
	for _, ip := range []netip.Addr{p.ip4, p.ip6} {
		if !ip.IsValid() {
			continue
		}
		v.must(p.ns, func() error {
			t.Cleanup(serveWhoami(t, netip.AddrPortFrom(ip, podPort)))
			return nil
		})
	}
}

// ipv6Prefix is the /80 the store hands /128s from.
func (w *world) ipv6Prefix() netip.Prefix {
	var p store.IPv6Pool
	w.view(func(tx *store.Tx) (err error) { p, _, err = tx.IPv6Pool(); return err })
	return p.Prefix
}

// nodeLeftovers lists what pods' wiring left in the node namespace: pod
// veths, egress veths, pod routes and rules of both families, neighbours
// of the given addresses, and routes into the egress ranges.
func (v *vpcNet) nodeLeftovers(ips ...netip.Addr) []string {
	hs := v.w.hostState()
	var out []string
	for _, x := range hs.Veths {
		out = append(out, "veth "+x)
	}
	for _, r := range hs.Routes {
		out = append(out, fmt.Sprintf("route %s dev %s", r.IP, r.Veth))
	}
	for _, r := range hs.Rules {
		out = append(out, fmt.Sprintf("rule %d %s", r.Priority, r.IP))
	}
	v.w.inNode(func() error {
		links, err := netlink.LinkList()
		if err != nil {
			return err
		}
		for _, l := range links {
			// One into a live namespace is detached (DEL leaves the pair to
			// the namespace's deletion); its routes are checked below.
			if strings.HasPrefix(l.Attrs().Name, "veth") && l.Attrs().NetNsID < 0 {
				out = append(out, "egress veth "+l.Attrs().Name)
			}
		}
		for _, family := range []int{unix.AF_INET, unix.AF_INET6} {
			neighs, err := netlink.NeighList(0, family)
			if err != nil {
				return err
			}
			for _, n := range neighs {
				if ip, ok := netip.AddrFromSlice(n.IP); ok && slices.Contains(ips, ip.Unmap()) {
					out = append(out, "neighbour "+ip.String())
				}
			}
			routes, err := netlink.RouteList(nil, family)
			if err != nil {
				return err
			}
			for _, r := range routes {
				if ip, ok := netip.AddrFromSlice(dstIP(r)); ok && (netns.EgressV4Range.Contains(ip.Unmap()) || netns.EgressV6Range.Contains(ip)) {
					out = append(out, "egress route "+r.Dst.String())
				}
			}
		}
		return nil
	})
	return out
}

func dstIP(r netlink.Route) net.IP {
	if r.Dst == nil {
		return nil
	}
	return r.Dst.IP
}

// ourNFT is every rule and set of vpc-cni's nftables tables (ip and ip6),
// as text, to compare before and after pods come and go.
func (v *vpcNet) ourNFT() []string {
	var out []string
	v.w.inNode(func() error {
		c, err := nftables.New()
		if err != nil {
			return err
		}
		tables, err := c.ListTables()
		if err != nil {
			return err
		}
		for _, tb := range tables {
			if tb.Name != hostnet.TableName {
				continue
			}
			chains, err := c.ListChainsOfTableFamily(tb.Family)
			if err != nil {
				return err
			}
			for _, ch := range chains {
				if ch.Table.Name != tb.Name {
					continue
				}
				rules, err := c.GetRules(tb, ch)
				if err != nil {
					return err
				}
				for _, r := range rules {
					out = append(out, fmt.Sprintf("%d/%s: %d exprs", tb.Family, ch.Name, len(r.Exprs)))
				}
			}
			sets, err := c.GetSets(tb)
			if err != nil {
				return err
			}
			for _, s := range sets {
				els, err := c.GetSetElements(s)
				if err != nil {
					return err
				}
				out = append(out, fmt.Sprintf("%d/set %s: %d elements", tb.Family, s.Name, len(els)))
			}
		}
		return nil
	})
	slices.Sort(out)
	return out
}

// hasInterface reports whether the result lists an interface of that name
// in the pod's namespace.
func hasInterface(res *current.Result, name, sandbox string) bool {
	return slices.ContainsFunc(res.Interfaces, func(i *current.Interface) bool {
		return i.Name == name && i.Sandbox == sandbox
	})
}

// IPv6-only pods through libcni on a simulated VPC: /128s from the node's
// /80, reaching each other, the node and the VPC's IPv6 host from their own
// address, and the IPv4-only internet host as the node's primary IPv4
// through v4if0; CHECK, GC and a DEL that leaves nothing behind.
func TestPrivilegedIPv6PodsOnASimulatedVPC(t *testing.T) {
	v := newVPCWorld6(t, ipv6Env...)
	prefix := v.w.ipv6Prefix()
	if !prefix.IsValid() || prefix.Bits() != 80 {
		t.Fatalf("no /80 in the store after the first pass: %v", prefix)
	}
	nftBefore := v.ourNFT()
	rt := v.w.runtime(conflist(v.w.conf(nil)))
	a, b := v.addPod6(t, rt, "six-a"), v.addPod6(t, rt, "six-b")
	for _, p := range []*pod6{a, b} {
		if p.ip4.IsValid() || !prefix.Contains(p.ip6) || p.ip6 == prefix.Addr() {
			t.Fatalf("IPv6-only pod got %s and %s; want one /128 of %s, not its network address", p.ip4, p.ip6, prefix)
		}
		if !hasInterface(p.res, netns.EgressV4IfName, p.ns.Path()) || p.res.IPs[0].Gateway.String() != "fe80::1" {
			t.Fatalf("result lacks v4if0 or the gateway fe80::1: %+v", p.res)
		}
	}
	b.serve(t, v)
	host6, _ := v.client6()
	t.Run("pods reach each other from their own address", func(t *testing.T) {
		sees(t, a.ns, b.ip6, podPort, a.ip6)
	})
	t.Run("the node reaches the pod", func(t *testing.T) {
		if err := ping(v.w.node, b.ip6); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("the VPC's IPv6 host sees the pod's address", func(t *testing.T) {
		sees(t, a.ns, host6, whoamiPort, a.ip6)
		if got, err := whoami(v.client, netip.AddrPortFrom(b.ip6, podPort)); err != nil || got != host6.String() {
			t.Fatalf("from the VPC's IPv6 host to the pod: saw %q, %v", got, err)
		}
	})
	t.Run("the IPv4-only internet host sees the node's primary IPv4 through v4if0", func(t *testing.T) {
		sees(t, a.ns, internetIP, whoamiPort, v.primaryIP)
	})
	t.Run("CHECK passes", func(t *testing.T) {
		if err := rt.check(a.pod, nil); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("GC releases the pod no longer listed", func(t *testing.T) {
		if err := rt.gc(a.pod); err != nil {
			t.Fatal(err)
		}
		if _, held := v.w.assignmentsByKey()[b.id+"/"+b.ifname]; held {
			t.Fatal("GC kept the assignment of a pod not in valid-attachments")
		}
	})
	t.Run("DEL leaves nothing behind, twice", func(t *testing.T) {
		for range 2 {
			for _, p := range []*pod6{a, b} {
				if err := rt.del(p.pod, nil); err != nil {
					t.Fatalf("DEL %s: %v", p.name, err)
				}
			}
		}
		if left := v.nodeLeftovers(a.ip6, b.ip6); len(left) > 0 {
			t.Fatalf("left behind: %v", left)
		}
		if n := len(v.w.assignments()); n != 0 {
			t.Fatalf("%d assignments after DEL", n)
		}
		if after := v.ourNFT(); !slices.Equal(after, nftBefore) {
			t.Fatalf("nftables changed across the pods' life:\nbefore %v\nafter  %v", nftBefore, after)
		}
		v.w.checkStore()
	})
}

// A dual-stack pod: a VPC IPv4 and a VPC IPv6 on eth0, both in the result,
// reached on both from the VPC, keeping its own addresses inside it.
func TestPrivilegedDualStackPodsOnASimulatedVPC(t *testing.T) {
	v := newVPCWorld6(t, dualEnv...)
	nftBefore := v.ourNFT()
	rt := v.w.runtime(conflist(v.w.conf(nil)))
	p, q := v.addPod6(t, rt, "dual-a"), v.addPod6(t, rt, "dual-b")
	if !p.ip4.IsValid() || !p.ip6.IsValid() || len(p.res.IPs) != 2 {
		t.Fatalf("dual-stack pod's result: %+v", p.res)
	}
	if !v.w.simHolds(p.ip4) || !v.w.ipv6Prefix().Contains(p.ip6) {
		t.Fatalf("%s is not the node's secondary IPv4 or %s not in its /80", p.ip4, p.ip6)
	}
	p.serve(t, v)
	host6, _ := v.client6()
	t.Run("reached on its IPv4 from the VPC", func(t *testing.T) {
		sees(t, v.client, p.ip4, podPort, clientIP)
	})
	t.Run("reached on its IPv6 from the VPC", func(t *testing.T) {
		if got, err := whoami(v.client, netip.AddrPortFrom(p.ip6, podPort)); err != nil || got != host6.String() {
			t.Fatalf("from the VPC's IPv6 host: saw %q, %v", got, err)
		}
	})
	t.Run("keeps its own addresses inside the VPC", func(t *testing.T) {
		sees(t, p.ns, clientIP, whoamiPort, p.ip4)
		sees(t, p.ns, host6, whoamiPort, p.ip6)
	})
	t.Run("leaves the VPC for the internet as the node", func(t *testing.T) {
		sees(t, p.ns, internetIP, whoamiPort, v.primaryIP)
	})
	t.Run("reaches another pod on both", func(t *testing.T) {
		q.serve(t, v)
		sees(t, p.ns, q.ip4, podPort, p.ip4)
		sees(t, p.ns, q.ip6, podPort, p.ip6)
	})
	t.Run("every spec version's result carries both addresses", func(t *testing.T) {
		for _, ver := range []string{"0.4.0", "1.0.0", "1.1.0"} {
			list := conflist(v.w.conf(nil))
			list["cniVersion"] = ver
			r := v.w.runtime(list)
			x := v.addPod6(t, r, "dual-v"+strings.ReplaceAll(ver, ".", ""))
			if !x.ip4.IsValid() || !x.ip6.IsValid() {
				t.Fatalf("%s result: %+v", ver, x.res)
			}
			if err := r.check(x.pod, nil); err != nil {
				t.Fatalf("%s CHECK: %v", ver, err)
			}
			if err := r.del(x.pod, nil); err != nil {
				t.Fatalf("%s DEL: %v", ver, err)
			}
		}
	})
	t.Run("CHECK, then DEL twice leaves nothing behind", func(t *testing.T) {
		if err := rt.check(p.pod, nil); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			for _, x := range []*pod6{p, q} {
				if err := rt.del(x.pod, nil); err != nil {
					t.Fatalf("DEL: %v", err)
				}
			}
		}
		if left := v.nodeLeftovers(p.ip4, p.ip6, q.ip4, q.ip6); len(left) > 0 {
			t.Fatalf("left behind: %v", left)
		}
		if after := v.ourNFT(); !slices.Equal(after, nftBefore) {
			t.Fatalf("nftables changed across the pod's life:\nbefore %v\nafter  %v", nftBefore, after)
		}
		if n := len(v.w.assignments()); n != 0 {
			t.Fatalf("%d assignments after DEL", n)
		}
		v.w.checkStore()
	})
}

// nodeLocal6 puts an IPv6 address on the node's lo (as a node's own
// address, where portmap's host ports answer) and returns it.
func (v *vpcNet) nodeLocal6() netip.Addr {
	host6, _ := v.client6()
	b := host6.As16()
	b[7], b[15] = 0xfb, 0x0a
	a := netip.AddrFrom16(b)
	v.w.inNode(func() error { return addr6(netlink.LinkByName, netlink.AddrAdd, "lo", a, 128) })
	return a
}

// portmap, bandwidth and tuning chained after vpc-cni, in IPv6-only and in
// dual-stack mode: the result they need (host veth first, the pod's
// addresses on the pod interface), an IPv6 host port DNATed to the pod,
// bandwidth's qdisc, CHECK through the chain, and a clean node after DEL.
func TestPrivilegedChainIPv6AndDualStack(t *testing.T) {
	for _, mode := range []struct {
		name string
		env  []string
	}{{"ipv6", ipv6Env}, {"dual", dualEnv}} {
		t.Run(mode.name, func(t *testing.T) {
			v := newVPCWorld6(t, mode.env...)
			local := v.nodeLocal6()
			rt := v.w.runtime(v.w.chainList(nil))
			web, client := &pod6{pod: v.w.newPod("web")}, &pod6{pod: v.w.newPod("client")}
			for i, p := range []*pod6{web, client} {
				res, err := rt.add(p.pod, chainCaps(i))
				if err != nil {
					t.Fatalf("ADD %s: %v", p.name, err)
				}
				p.res = res
				for _, ipc := range res.IPs {
					if ip := anyAddr(t, ipc.Address.IP); ip.Is6() {
						p.ip6 = ip
					} else {
						p.ip4 = ip
					}
				}
				if len(res.Interfaces) < 2 || res.Interfaces[0].Name != p.hostVeth() || res.Interfaces[1].Name != p.ifname {
					t.Fatalf("result interfaces %+v: want the host veth then %s", res.Interfaces, p.ifname)
				}
				v.w.assertBandwidth(p.pod)
				if err := rt.check(p.pod, chainCaps(i)); err != nil {
					t.Fatalf("CHECK %s through the chain: %v", p.name, err)
				}
			}
			v.must(web.ns, func() error {
				t.Cleanup(serveWhoami(t, netip.AddrPortFrom(web.ip6, 80)))
				return nil
			})
			sees(t, client.ns, local, 18080, client.ip6) // portmap's IPv6 DNAT to web:80
			for i, p := range []*pod6{web, client} {
				if err := rt.del(p.pod, chainCaps(i)); err != nil {
					t.Fatalf("DEL %s: %v", p.name, err)
				}
			}
			if left := v.nodeLeftovers(web.ip6, client.ip6); len(left) > 0 {
				t.Fatalf("left behind: %v", left)
			}
			v.w.assertNodeClean()
		})
	}
}

// ptp with "ipam": {"type": "vpc-cni"} in dual-stack mode: both families
// from the pool, on the pod's interface, with their policy rules; CHECK;
// DEL gives both back and removes the rules.
func TestPrivilegedIPAMDelegateDualStack(t *testing.T) {
	v := newVPCWorld6(t, dualEnv...)
	plugin := map[string]any{"type": "ptp", "mtu": 1500, "ipam": v.w.ipamConf()}
	rt := v.w.runtime(conflist(plugin))
	p := v.w.newPod("ptp-dual")
	res, err := rt.add(p, nil)
	if err != nil {
		t.Fatalf("ADD: %v", err)
	}
	var got []netip.Addr
	for _, ipc := range res.IPs {
		got = append(got, anyAddr(t, ipc.Address.IP))
	}
	a := v.w.assignmentsByKey()[p.id+"/"+p.ifname]
	if !slices.Equal(got, []netip.Addr{a.IP, a.IPv6}) || !a.IPv6.IsValid() {
		t.Fatalf("result has %v; the store holds %s and %s", got, a.IP, a.IPv6)
	}
	for _, ip := range got {
		assertPodHasAddr(t, handleIn(t, p.ns), p.ifname, ip)
		if !v.w.hasRule(netns.PrioToPod, ip) {
			t.Errorf("no rule to %s lookup main prio 512: %+v", ip, v.w.hostState().Rules)
		}
	}
	if err := rt.check(p, nil); err != nil {
		t.Fatalf("CHECK: %v", err)
	}
	if err := rt.del(p, nil); err != nil {
		t.Fatalf("DEL: %v", err)
	}
	if rules := v.w.hostState().Rules; len(rules) != 0 {
		t.Fatalf("rules left after DEL: %+v", rules)
	}
	if n := len(v.w.assignments()); n != 0 {
		t.Fatalf("%d assignments after DEL", n)
	}
}

// The shipped conflist under containerd's CRI (crictl → containerd → runc),
// on a dual-stack node and on an IPv6-only node: `crictl inspectp` lists
// the pod's addresses (both for dual-stack, IPv4 first), the store holds
// the same, the node reaches the pod on each, and removal leaves a clean
// node.
func TestPrivilegedContainerdCRIIPv6AndDualStack(t *testing.T) {
	testenv.RequireRoot(t, needsRoot)
	if _, why := criBinaries(); why != "" {
		t.Skip(why)
	}
	for _, mode := range []struct {
		name string
		env  []string
	}{{"dual", dualEnv}, {"ipv6", ipv6Env}} {
		t.Run(mode.name, func(t *testing.T) {
			v := newVPCWorld6(t, mode.env...)
			logFile := filepath.Join(t.TempDir(), "plugin.log")
			cri := startContainerd(t, v.w, v.w.shippedConflist(logFile))
			t.Cleanup(func() { waitBackgroundPasses(t, logFile) })
			p := cri.runPod(t, "shop", mode.name+"-0")
			a, ok := v.w.assignmentsByKey()[p.id+"/"+p.ifname]
			if !ok {
				t.Fatalf("no assignment for sandbox %s", p.id)
			}
			var want []string
			for _, ip := range podIPsOf(a) {
				want = append(want, ip.String())
			}
			if !slices.Equal(p.ips, want) || len(want) != map[string]int{"dual": 2, "ipv6": 1}[mode.name] {
				t.Fatalf("crictl inspectp lists %v; the store holds %v", p.ips, want)
			}
			for _, ip := range podIPsOf(a) {
				if err := ping(v.w.node, ip); err != nil {
					t.Errorf("node -> pod %s: %v", ip, err)
				}
			}
			waitBackgroundPasses(t, logFile)
			for _, verb := range []string{"stopp", "rmp"} {
				if _, err := cri.run(verb, p.id); err != nil {
					t.Fatal(err)
				}
			}
			waitBackgroundPasses(t, logFile)
			_ = p.ns.Close() // the test's hold: the pair goes with the namespace
			v.w.waitNoVeths()
			if left := v.nodeLeftovers(a.IP, a.IPv6); len(left) > 0 {
				t.Fatalf("left behind: %v", left)
			}
			v.w.assertNodeClean()
		})
	}
}

func podIPsOf(a store.Assignment) []netip.Addr {
	var out []netip.Addr
	for _, ip := range []netip.Addr{a.IP, a.IPv6} {
		if ip.IsValid() {
			out = append(out, ip)
		}
	}
	return out
}
