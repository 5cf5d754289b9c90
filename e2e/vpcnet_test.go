package e2e

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"vpc-cni/internal/testsupport/testenv"
	"vpc-cni/sim/ec2sim"
)

// A VPC in namespaces. "vpc" is the VPC's router: it holds the other end
// (sim-eth<N>) of every ENI link of the node, routes each ENI address to its
// ENI, and enforces EC2's source/destination check (an ENI may send only
// from its own addresses). "outside" is behind it: an internet host that
// answers only the node's primary address (as an internet gateway
// translates only that), and a peered network that answers anyone. "client"
// is a host inside the VPC, outside the node's subnet.
var (
	vpcGateway  = netip.MustParseAddr("100.64.0.1") // the subnet's router (100.64.0.0/20)
	clientIP    = netip.MustParseAddr("100.64.250.10")
	clientGW    = netip.MustParseAddr("100.64.250.1")
	internetIP  = netip.MustParseAddr("100.100.0.10")
	peeredIP    = netip.MustParseAddr("100.101.0.10")
	peeredCIDR  = "100.101.0.0/16"
	serviceIP   = netip.MustParseAddr("100.120.0.1") // a ClusterIP: outside the VPC, DNATed on the node
	outsideVPC  = netip.MustParseAddr("100.99.0.1")  // the vpc end of the link to outside
	outsideHost = netip.MustParseAddr("100.99.0.2")
)

const (
	whoamiPort   = 7000  // every test server answers with the address it saw
	nodePort     = 30080 // on the node's primary address
	podPort      = 8080
	vpcLinkPrefx = "sim-eth"
)

type vpcNet struct {
	w                    *world
	vpc, outside, client ns.NetNS
	primaryIP            netip.Addr
	gateways             map[string]netip.Addr // subnet ID -> its router, for subnets besides the node's
	admits               map[netip.Addr]string // VPC host -> the one security group it admits (vpcgroups_test.go)
}

// newVPCWorld builds the namespaces, a world whose ENI links end in the vpc
// namespace, and the primary ENI's link eth0. Everything is deleted when the
// test ends, pass or fail (testenv.NewNetNS).
func newVPCWorld(t *testing.T, env ...string) *vpcNet {
	t.Helper()
	return newVPCWorldPrepared(t, nil, env...)
}

// newVPCWorldPrepared is newVPCWorld with the emulator shaped by prepare
// before the first pass; prepare returns the gateways of the subnets it adds
// and knobs that name them (written to the configuration file).
func newVPCWorldPrepared(t *testing.T, prepare func(*ec2sim.Sim) (map[string]netip.Addr, []string), env ...string) *vpcNet {
	t.Helper()
	return newVPCWorldWith(t, prepare, "", env...)
}

// newVPCWorldWith is newVPCWorldPrepared with a failed step that the
// passes building the world may report (world.expectFailed).
func newVPCWorldWith(t *testing.T, prepare func(*ec2sim.Sim) (map[string]netip.Addr, []string), expectFailed string,
	env ...string) *vpcNet {
	t.Helper()
	testenv.RequireRoot(t, needsRoot)
	v := &vpcNet{vpc: testenv.NewNetNS(t), outside: testenv.NewNetNS(t), client: testenv.NewNetNS(t)}
	o := worldOpts{instanceType: "t3.medium", env: env, peerNetns: v.vpc.Path(), expectFailed: expectFailed}
	if prepare != nil {
		o.prepare = func(s *ec2sim.Sim) (extra []string) {
			v.gateways, extra = prepare(s)
			return extra
		}
		if o.expectFailed == "" {
			o.expectFailed = "InsufficientFreeAddressesInSubnet"
		}
	}
	v.w = newWorld(t, o)
	v.primaryIP = v.w.nodeIP
	if err := v.w.sim.PlugPrimary(); err != nil {
		t.Fatal(err)
	}
	v.w.inNode(v.setupPrimaryLink)
	v.must(v.vpc, v.setupRouter)
	v.must(v.client, func() error { return v.link(v.vpc, "client0", clientGW, 24, clientIP, 24) })
	v.must(v.outside, func() error { return v.link(v.vpc, "igw0", outsideVPC, 30, outsideHost, 30) })
	v.must(v.outside, v.setupOutside)
	v.must(v.vpc, func() error { return netlink.RouteAdd(&netlink.Route{Gw: ipOf(outsideHost)}) })
	v.must(v.client, func() error {
		v.w.tb.Cleanup(serveWhoami(v.w.tb, netip.AddrPortFrom(clientIP, whoamiPort)))
		return nil
	})
	v.w.reconcileUntilSettled(env...) // the node rules, now that eth0 is there
	v.syncVPC()
	return v
}

func (v *vpcNet) must(n ns.NetNS, fn func() error) {
	v.w.tb.Helper()
	if err := n.Do(func(ns.NetNS) error { return fn() }); err != nil {
		v.w.tb.Fatal(err)
	}
}

// setupPrimaryLink: eth0 up with the primary address in the subnet and the
// default route through the VPC's router, as a node boots.
func (v *vpcNet) setupPrimaryLink() error {
	if err := refuseOriginalNetNS(); err != nil {
		return err
	}
	eth0, err := netlink.LinkByName("eth0")
	if err != nil {
		return err
	}
	if err := netlink.LinkSetUp(eth0); err != nil {
		return err
	}
	// The harness put the primary address on lo; a node has it on eth0 only
	// (a local route on lo would hide it from `fib daddr . iif`).
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return err
	}
	if err := netlink.AddrDel(lo, &netlink.Addr{IPNet: &net.IPNet{IP: ipOf(v.primaryIP), Mask: net.CIDRMask(32, 32)}}); err != nil {
		return err
	}
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: ipOf(v.primaryIP), Mask: net.CIDRMask(20, 32)}}
	if err := netlink.AddrAdd(eth0, addr); err != nil {
		return err
	}
	return netlink.RouteAdd(&netlink.Route{LinkIndex: eth0.Attrs().Index, Gw: ipOf(vpcGateway)})
}

// setupRouter: forwarding on, no reverse-path filter (the source check below
// is the VPC's), a route to the outside.
func (v *vpcNet) setupRouter() error {
	if err := refuseOriginalNetNS(); err != nil {
		return err
	}
	for _, f := range []string{"/proc/sys/net/ipv4/ip_forward", "/proc/sys/net/ipv4/conf/all/rp_filter", "/proc/sys/net/ipv4/conf/default/rp_filter"} {
		val := "1"
		if strings.HasSuffix(f, "rp_filter") {
			val = "0"
		}
		if err := os.WriteFile(f, []byte(val), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// link makes a veth from the current namespace ("eth0", address here) to
// peerNS (name there, address there).
func (v *vpcNet) link(peerNS ns.NetNS, name string, peerAddr netip.Addr, peerBits int, addr netip.Addr, bits int) error {
	if err := refuseOriginalNetNS(); err != nil {
		return err
	}
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "eth0"}, PeerName: name, PeerNamespace: netlink.NsFd(peerNS.Fd())}
	if err := netlink.LinkAdd(veth); err != nil {
		return err
	}
	if err := upWithAddr(netlink.LinkByName, netlink.LinkSetUp, netlink.AddrAdd, "eth0", addr, bits); err != nil {
		return err
	}
	if err := netlink.RouteAdd(&netlink.Route{Gw: ipOf(peerAddr)}); err != nil {
		return err
	}
	h := handleIn(v.w.tb, peerNS)
	return upWithAddr(h.LinkByName, h.LinkSetUp, h.AddrAdd, name, peerAddr, peerBits)
}

func upWithAddr(byName func(string) (netlink.Link, error), up func(netlink.Link) error,
	add func(netlink.Link, *netlink.Addr) error, name string, a netip.Addr, bits int) error {
	l, err := byName(name)
	if err != nil {
		return err
	}
	if err := add(l, &netlink.Addr{IPNet: &net.IPNet{IP: ipOf(a), Mask: net.CIDRMask(bits, 32)}}); err != nil {
		return err
	}
	return up(l)
}

// setupOutside: the internet host and the peered host on lo, each with a
// whoami server; the internet host drops every source but the node's
// primary address.
func (v *vpcNet) setupOutside() error {
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return err
	}
	for _, a := range []netip.Addr{internetIP, peeredIP} {
		if err := netlink.AddrAdd(lo, &netlink.Addr{IPNet: &net.IPNet{IP: ipOf(a), Mask: net.CIDRMask(32, 32)}}); err != nil {
			return err
		}
	}
	if err := netlink.LinkSetUp(lo); err != nil {
		return err
	}
	c, err := nftables.New()
	if err != nil {
		return err
	}
	t := c.AddTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: "igw"})
	in := c.AddChain(&nftables.Chain{Name: "input", Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookInput, Priority: nftables.ChainPriorityFilter})
	c.AddRule(&nftables.Rule{Table: t, Chain: in, Exprs: cat(
		ipField(16, expr.CmpOpEq, internetIP), ipField(12, expr.CmpOpNeq, v.primaryIP), drop())})
	if err := c.Flush(); err != nil {
		return err
	}
	v.w.tb.Cleanup(serveWhoami(v.w.tb, netip.AddrPortFrom(internetIP, whoamiPort)))
	v.w.tb.Cleanup(serveWhoami(v.w.tb, netip.AddrPortFrom(peeredIP, whoamiPort)))
	return nil
}

// syncVPC makes the vpc namespace route every ENI address of the emulator's
// state to its ENI link, and lets each link send only from its ENI's
// addresses. Run it after the pool changed.
func (v *vpcNet) syncVPC() {
	v.w.tb.Helper()
	state := v.w.sim.State()
	v.must(v.vpc, func() error {
		c, err := nftables.New()
		if err != nil {
			return err
		}
		t, fwd := freshForwardChain(c, nftables.TableFamilyIPv4, "srccheck")
		for _, e := range state.ENIs {
			if e.DeviceIndex < 0 {
				continue
			}
			link := fmt.Sprintf("%s%d", vpcLinkPrefx, e.DeviceIndex)
			if err := v.routeENI(link, e); err != nil {
				return err
			}
			for _, a := range eniAddrs4(e) {
				c.AddRule(&nftables.Rule{Table: t, Chain: fwd, Exprs: cat(iif(link), ipField(12, expr.CmpOpEq, a), accept())})
			}
			c.AddRule(&nftables.Rule{Table: t, Chain: fwd, Exprs: cat(iif(link), drop())})
		}
		if err := c.Flush(); err != nil {
			return err
		}
		return v.syncGroups(state)
	})
	v.syncVPC6(state)
}

// routeENI: the gateway address on the ENI's link (the node ARPs for it), a
// route and a permanent neighbour for each of its addresses (the VPC knows
// which ENI holds an address; it does not ARP for it).
func (v *vpcNet) routeENI(link string, e ec2sim.ENI) error {
	l, err := netlink.LinkByName(link)
	if err != nil {
		return fmt.Errorf("the vpc end of %s: %w", e.ID, err)
	}
	router := vpcGateway
	if g, ok := v.gateways[e.SubnetID]; ok {
		router = g
	}
	gw := &netlink.Addr{IPNet: &net.IPNet{IP: ipOf(router), Mask: net.CIDRMask(32, 32)}}
	if err := netlink.AddrReplace(l, gw); err != nil {
		return err
	}
	mac, err := net.ParseMAC(e.MAC)
	if err != nil {
		return err
	}
	for _, a := range eniAddrs4(e) {
		r := &netlink.Route{LinkIndex: l.Attrs().Index, Dst: &net.IPNet{IP: ipOf(a), Mask: net.CIDRMask(32, 32)}}
		if err := netlink.RouteReplace(r); err != nil {
			return err
		}
		n := &netlink.Neigh{LinkIndex: l.Attrs().Index, IP: ipOf(a), HardwareAddr: mac, State: netlink.NUD_PERMANENT, Family: unix.AF_INET}
		if err := netlink.NeighSet(n); err != nil {
			return err
		}
	}
	return nil
}

// eniAddrs4 are the IPv4 addresses EC2 gives the ENI: its primary, its
// secondaries and every address of its prefixes.
func eniAddrs4(e ec2sim.ENI) []netip.Addr {
	addrs := append([]netip.Addr{e.PrimaryIP}, e.Secondary...)
	for _, p := range e.Prefixes {
		for a := p.Masked().Addr(); p.Contains(a); a = a.Next() {
			addrs = append(addrs, a)
		}
	}
	return addrs
}

func cat(parts ...[]expr.Any) []expr.Any {
	var out []expr.Any
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// ipField compares the IPv4 header field at offset (12 source, 16 destination).
func ipField(offset uint32, op expr.CmpOp, a netip.Addr) []expr.Any {
	return []expr.Any{&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: 4},
		&expr.Cmp{Op: op, Register: 1, Data: a.AsSlice()}}
}

func iif(name string) []expr.Any {
	b := make([]byte, unix.IFNAMSIZ)
	copy(b, name)
	return []expr.Any{&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: 1}, &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: b}}
}

func drop() []expr.Any   { return []expr.Any{&expr.Verdict{Kind: expr.VerdictDrop}} }
func accept() []expr.Any { return []expr.Any{&expr.Verdict{Kind: expr.VerdictAccept}} }

// addNodePort stands for kube-proxy: in the node namespace, its own table
// DNATs primaryIP:nodePort to pod:podPort.
func (v *vpcNet) addNodePort(pod netip.Addr) { v.addDNAT(v.primaryIP, nodePort, pod, podPort) }

// addDNAT adds a kube-proxy-like rule: TCP to dst:dport goes to to:toPort.
func (v *vpcNet) addDNAT(dst netip.Addr, dport uint16, to netip.Addr, toPort uint16) {
	v.w.inNode(func() error {
		c, err := nftables.New()
		if err != nil {
			return err
		}
		t := c.AddTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: "kube-proxy"})
		pre := c.AddChain(&nftables.Chain{Name: "nat-prerouting", Table: t, Type: nftables.ChainTypeNAT,
			Hooknum: nftables.ChainHookPrerouting, Priority: nftables.ChainPriorityNATDest})
		c.AddRule(&nftables.Rule{Table: t, Chain: pre, Exprs: cat(
			ipField(16, expr.CmpOpEq, dst),
			[]expr.Any{
				&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
				&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_TCP}},
				&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
				&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.BigEndian.PutUint16(dport)},
				&expr.Immediate{Register: 1, Data: to.AsSlice()},
				&expr.Immediate{Register: 2, Data: binaryutil.BigEndian.PutUint16(toPort)},
				&expr.NAT{Type: expr.NATTypeDestNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: 1, RegProtoMin: 2},
			})})
		return c.Flush()
	})
}

// serveWhoami listens at addr in the calling thread's namespace and answers
// each connection with the source address it saw; the returned func stops it.
func serveWhoami(tb testing.TB, addr netip.AddrPort) func() {
	l, err := net.Listen("tcp", addr.String())
	if err != nil {
		tb.Fatalf("listen %s: %v", addr, err)
	}
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			host, _, _ := net.SplitHostPort(conn.RemoteAddr().String())
			_, _ = io.WriteString(conn, host)
			_ = conn.Close()
		}
	}()
	return func() { _ = l.Close() }
}

// whoami connects from namespace n to addr and returns the source address
// the server saw, or an error (a dropped packet times out).
func whoami(n ns.NetNS, addr netip.AddrPort) (string, error) {
	var seen string
	err := n.Do(func(ns.NetNS) error {
		conn, err := net.DialTimeout("tcp", addr.String(), 3*time.Second)
		if err != nil {
			return err
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
		b, err := io.ReadAll(conn)
		seen = string(b)
		return err
	})
	return seen, err
}

// freshForwardChain replaces the vpc namespace's table name of family with
// an empty one holding a forward filter chain (the source check's rules).
func freshForwardChain(c *nftables.Conn, family nftables.TableFamily, name string) (*nftables.Table, *nftables.Chain) {
	t := &nftables.Table{Family: family, Name: name}
	c.DelTable(t)
	_ = c.Flush() // absent the first time
	t = c.AddTable(t)
	return t, c.AddChain(&nftables.Chain{Name: "forward", Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookForward, Priority: nftables.ChainPriorityFilter})
}
