package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"vpc-cni/sim/ec2sim"
)

// IPv6 in the simulated VPC. The vpc namespace answers as the subnet router
// on fe80:ec2::1 on every ENI link (the address EC2's router has), routes
// each ENI's IPv6 addresses and /80 prefixes to its link (the /80s through
// the ENI's EUI-64 link-local address, with a permanent neighbour: the VPC
// knows where a prefix is, it does not solicit), and applies the
// source/destination check to IPv6 sources as to IPv4 ones. The client
// namespace is the VPC's IPv6 host, in another /64 of the VPC's /56. The
// internet host stays IPv4 only.
var vpcRouter6 = netip.MustParseAddr("fe80:ec2::1")

// client6 is the IPv6 host (subnet 0xfa of the VPC's /56, ::10) and its
// router on the vpc side (::1).
func (v *vpcNet) client6() (host, router netip.Addr) {
	b := v.w.sim.VPCIPv6CIDR().Addr().As16()
	b[7] = 0xfa
	b[15] = 0x01
	router = netip.AddrFrom16(b)
	b[15] = 0x10
	return netip.AddrFrom16(b), router
}

// setupIPv6 turns IPv6 forwarding on in the vpc namespace and gives the
// client its IPv6 address, route and a whoami server.
func (v *vpcNet) setupIPv6() {
	host, router := v.client6()
	v.must(v.vpc, func() error {
		if err := refuseOriginalNetNS(); err != nil {
			return err
		}
		if err := os.WriteFile("/proc/sys/net/ipv6/conf/all/forwarding", []byte("1"), 0o644); err != nil {
			return err
		}
		return addr6(netlink.LinkByName, netlink.AddrAdd, "client0", router, 64)
	})
	v.must(v.client, func() error {
		if err := addr6(netlink.LinkByName, netlink.AddrAdd, "eth0", host, 64); err != nil {
			return err
		}
		if err := netlink.RouteAdd(&netlink.Route{Dst: &net.IPNet{IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)},
			Gw: ipOf(router)}); err != nil {
			return err
		}
		v.w.tb.Cleanup(serveWhoami(v.w.tb, netip.AddrPortFrom(host, whoamiPort)))
		return nil
	})
}

// addr6 adds an IPv6 address without duplicate address detection, so it is
// usable at once.
func addr6(byName func(string) (netlink.Link, error), add func(netlink.Link, *netlink.Addr) error,
	link string, a netip.Addr, bits int) error {
	l, err := byName(link)
	if err != nil {
		return err
	}
	return add(l, &netlink.Addr{IPNet: &net.IPNet{IP: ipOf(a), Mask: net.CIDRMask(bits, 128)}, Flags: unix.IFA_F_NODAD})
}

// syncVPC6 is syncVPC for IPv6: router address, routes, neighbours and the
// ip6 source check, from the emulator's state.
func (v *vpcNet) syncVPC6(state ec2sim.State) {
	v.w.tb.Helper()
	v.must(v.vpc, func() error {
		c, err := nftables.New()
		if err != nil {
			return err
		}
		t, fwd := freshForwardChain(c, nftables.TableFamilyIPv6, "srccheck6")
		for _, e := range state.ENIs {
			if e.DeviceIndex < 0 {
				continue
			}
			link := fmt.Sprintf("%s%d", vpcLinkPrefx, e.DeviceIndex)
			if err := routeENI6(link, e); err != nil {
				return err
			}
			for _, a := range e.IPv6s {
				c.AddRule(&nftables.Rule{Table: t, Chain: fwd, Exprs: cat(iif(link), ip6Src(netip.PrefixFrom(a, 128)), accept())})
			}
			for _, p := range e.IPv6Prefixes {
				c.AddRule(&nftables.Rule{Table: t, Chain: fwd, Exprs: cat(iif(link), ip6Src(p), accept())})
			}
			c.AddRule(&nftables.Rule{Table: t, Chain: fwd, Exprs: cat(iif(link), drop())})
		}
		return c.Flush()
	})
}

func routeENI6(link string, e ec2sim.ENI) error {
	l, err := netlink.LinkByName(link)
	if err != nil {
		return fmt.Errorf("the vpc end of %s: %w", e.ID, err)
	}
	gw := &netlink.Addr{IPNet: &net.IPNet{IP: ipOf(vpcRouter6), Mask: net.CIDRMask(64, 128)}, Flags: unix.IFA_F_NODAD}
	if err := netlink.AddrReplace(l, gw); err != nil {
		return err
	}
	mac, err := net.ParseMAC(e.MAC)
	if err != nil {
		return err
	}
	ll := eui64LinkLocal(mac)
	neighs := append([]netip.Addr{ll}, e.IPv6s...)
	for _, a := range neighs {
		n := &netlink.Neigh{LinkIndex: l.Attrs().Index, IP: ipOf(a), HardwareAddr: mac, State: netlink.NUD_PERMANENT, Family: unix.AF_INET6}
		if err := netlink.NeighSet(n); err != nil {
			return err
		}
	}
	for _, a := range e.IPv6s {
		r := &netlink.Route{LinkIndex: l.Attrs().Index, Dst: &net.IPNet{IP: ipOf(a), Mask: net.CIDRMask(128, 128)}}
		if err := netlink.RouteReplace(r); err != nil {
			return err
		}
	}
	for _, p := range e.IPv6Prefixes {
		r := &netlink.Route{LinkIndex: l.Attrs().Index, Gw: ipOf(ll),
			Dst: &net.IPNet{IP: ipOf(p.Addr()), Mask: net.CIDRMask(p.Bits(), 128)}}
		if err := netlink.RouteReplace(r); err != nil {
			return err
		}
	}
	return nil
}

// eui64LinkLocal is the link-local address the kernel gives a link with this
// MAC (addr_gen_mode eui64, the default).
func eui64LinkLocal(mac net.HardwareAddr) netip.Addr {
	var b [16]byte
	b[0], b[1] = 0xfe, 0x80
	b[8], b[9], b[10] = mac[0]^0x02, mac[1], mac[2]
	b[11], b[12] = 0xff, 0xfe
	b[13], b[14], b[15] = mac[3], mac[4], mac[5]
	return netip.AddrFrom16(b)
}

// ip6Src matches the IPv6 source address against a prefix.
func ip6Src(p netip.Prefix) []expr.Any {
	mask := net.CIDRMask(p.Bits(), 128)
	return []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 8, Len: 16},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 16, Mask: mask, Xor: make([]byte, 16)},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: p.Masked().Addr().AsSlice()},
	}
}

// simAssignIPv6 calls AssignIpv6Addresses on the emulator (it checks no
// signature; it listens in the node namespace, so the connection is made on
// this thread there) and returns what it assigned, as the XML's item texts.
func (v *vpcNet) simAssignIPv6(eniID, param string, n int) []string {
	v.w.tb.Helper()
	form := url.Values{"Action": {"AssignIpv6Addresses"}, "Version": {"2016-11-15"},
		"NetworkInterfaceId": {eniID}, param: {fmt.Sprint(n)}}
	req, err := http.NewRequest(http.MethodPost, v.w.sim.URL(), strings.NewReader(form.Encode()))
	if err != nil {
		v.w.tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	var body []byte
	v.w.inNode(func() error {
		conn, err := net.Dial("tcp", req.URL.Host)
		if err != nil {
			return err
		}
		defer conn.Close()
		if err := req.Write(conn); err != nil {
			return err
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ = io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("AssignIpv6Addresses: %s", body)
		}
		return nil
	})
	var out []string
	for _, part := range strings.Split(string(body), "<item>")[1:] {
		out = append(out, strings.Split(part, "</item>")[0])
	}
	return out
}

// whoamiFrom is whoami with the connection's source address chosen.
func whoamiFrom(n ns.NetNS, from netip.Addr, to netip.AddrPort) (string, error) {
	var seen string
	err := n.Do(func(ns.NetNS) error {
		d := net.Dialer{Timeout: 3 * time.Second, LocalAddr: &net.TCPAddr{IP: ipOf(from)}}
		conn, err := d.Dial("tcp", to.String())
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

// The VPC routes IPv6 to and from an ENI's /128 and its /80, drops IPv6 the
// ENI sends from an address not its own, and still reaches the IPv4-only
// internet host.
func TestPrivilegedSimulatedVPCRoutesIPv6(t *testing.T) {
	v := newVPCWorld(t)
	v.setupIPv6()
	primary := v.w.sim.State().ENIs[0]
	addr := netip.MustParseAddr(v.simAssignIPv6(primary.ID, "Ipv6AddressCount", 1)[0])
	pfx := netip.MustParsePrefix(v.simAssignIPv6(primary.ID, "Ipv6PrefixCount", 1)[0])
	v.syncVPC()
	inPrefix := pfx.Addr().Next()
	sub, _ := v.w.sim.SubnetIPv6CIDR(primary.SubnetID)
	spoofed := netip.AddrFrom16(func() [16]byte { b := sub.Addr().As16(); b[15] = 0xee; return b }())
	v.w.inNode(func() error {
		for _, a := range []netip.Addr{addr, inPrefix, spoofed} {
			if err := addr6(netlink.LinkByName, netlink.AddrAdd, "eth0", a, 128); err != nil {
				return err
			}
		}
		eth0, err := netlink.LinkByName("eth0")
		if err != nil {
			return err
		}
		return netlink.RouteAdd(&netlink.Route{LinkIndex: eth0.Attrs().Index, Gw: ipOf(vpcRouter6),
			Dst: &net.IPNet{IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)}})
	})
	host, _ := v.client6()
	for _, src := range []netip.Addr{addr, inPrefix} {
		got, err := whoamiFrom(v.w.node, src, netip.AddrPortFrom(host, whoamiPort))
		if err != nil || got != src.String() {
			t.Fatalf("from %s to the VPC's IPv6 host: saw %q, %v", src, got, err)
		}
	}
	// A way back for the spoofed address, so only the source check drops it.
	v.must(v.vpc, func() error {
		l, err := netlink.LinkByName(vpcLinkPrefx + "0")
		if err != nil {
			return err
		}
		return netlink.RouteAdd(&netlink.Route{LinkIndex: l.Attrs().Index,
			Dst: &net.IPNet{IP: ipOf(spoofed), Mask: net.CIDRMask(128, 128)}})
	})
	if got, err := whoamiFrom(v.w.node, spoofed, netip.AddrPortFrom(host, whoamiPort)); err == nil {
		t.Fatalf("from %s (not the ENI's): answered (saw %s); the source check must drop it", spoofed, got)
	}
	v.must(v.vpc, func() error {
		c, err := nftables.New()
		if err != nil {
			return err
		}
		c.DelTable(&nftables.Table{Family: nftables.TableFamilyIPv6, Name: "srccheck6"})
		return c.Flush()
	})
	if got, err := whoamiFrom(v.w.node, spoofed, netip.AddrPortFrom(host, whoamiPort)); err != nil || got != spoofed.String() {
		t.Fatalf("without the source check, from %s: saw %q, %v (so the drop above was not the check's)", spoofed, got, err)
	}
	v.syncVPC()
	sees(t, v.w.node, internetIP, whoamiPort, v.primaryIP)
}
