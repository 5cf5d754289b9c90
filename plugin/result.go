package plugin

import (
	"net"
	"net/netip"
	"strings"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"

	"vpc-cni/netns"
	"vpc-cni/store"
)

var (
	defaultRoute  = net.IPNet{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(0, 32)}
	defaultRoute6 = net.IPNet{IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)}
)

func gateway() net.IP  { return net.IP(netns.PodGateway.AsSlice()) }
func gateway6() net.IP { return net.IP(netns.PodGateway6.AsSlice()) }

// ipv6PrefixBits is the delegated prefix a pod's /128 comes from (one /80
// per ENI, aligned), so the /80 is the address masked to it.
const ipv6PrefixBits = 80

// podIPs are the pod's VPC addresses, IPv4 first.
func podIPs(a store.Assignment) []netip.Addr {
	var out []netip.Addr
	for _, ip := range []netip.Addr{a.IP, a.IPv6} {
		if ip.IsValid() {
			out = append(out, ip)
		}
	}
	return out
}

// addrList names the pod's addresses for messages.
func addrList(a store.Assignment) string {
	var s []string
	for _, ip := range append(podIPs(a), a.EgressIP) {
		if ip.IsValid() {
			s = append(s, ip.String())
		}
	}
	return strings.Join(s, ", ")
}

// interfaceResult lists the host veth (no sandbox) first and the pod
// interface second, as bandwidth and portmap expect, then the egress pair
// (v4if0 or v6if0) when the pod has one. IPs are the pod's VPC addresses
// (IPv4 first) on the pod interface, each with its link-local gateway, so
// the runtime reports both of a dual-stack pod. The egress address is not
// among them: it is node-local (SNATed, unreachable from elsewhere), and a
// runtime or portmap taking it for a pod IP would publish an address
// nothing can reach; the egress interface is listed, and its default route.
func interfaceResult(cfg *Config, args *skel.CmdArgs, a store.Assignment, w netns.Wired) *current.Result {
	r := &current.Result{
		CNIVersion: current.ImplementedSpecVersion,
		Interfaces: []*current.Interface{
			{Name: w.HostVeth, Mac: w.HostMAC},
			{Name: w.PodIf, Mac: w.PodMAC, Sandbox: args.Netns},
		},
	}
	if a.IP.IsValid() {
		r.IPs = append(r.IPs, &current.IPConfig{Interface: current.Int(1), Address: hostNet(a.IP), Gateway: gateway()})
		r.Routes = append(r.Routes, &types.Route{Dst: defaultRoute, GW: gateway()})
	}
	if a.IPv6.IsValid() {
		r.IPs = append(r.IPs, &current.IPConfig{Interface: current.Int(1), Address: hostNet(a.IPv6), Gateway: gateway6()})
		r.Routes = append(r.Routes, &types.Route{Dst: defaultRoute6, GW: gateway6()})
	}
	if e := w.Egress; e != nil {
		r.Interfaces = append(r.Interfaces,
			&current.Interface{Name: e.HostVeth, Mac: e.HostMAC},
			&current.Interface{Name: e.PodIf, Mac: e.PodMAC, Sandbox: args.Netns})
		if a.EgressIP.Is4() {
			r.Routes = append(r.Routes, &types.Route{Dst: defaultRoute, GW: net.IP(netns.EgressV4Gateway.AsSlice())})
		}
	}
	return r
}

// hostNet is ip as a single-address network (/32 or /128).
func hostNet(ip netip.Addr) net.IPNet {
	return net.IPNet{IP: net.IP(ip.AsSlice()), Mask: net.CIDRMask(ip.BitLen(), ip.BitLen())}
}

// ipamResult is what an interface plugin (ptp, bridge, ipvlan) configures:
// the IPv4 in the node's subnet and the IPv6 in its /80, so their "gateway
// /32 (/128) plus subnet via gateway" wiring works, and the link-local
// gateways, which never collide with a VPC address. Routing beyond that is
// theirs.
func ipamResult(cfg *Config, a store.Assignment, subnet netip.Prefix) *current.Result {
	r := &current.Result{CNIVersion: current.ImplementedSpecVersion}
	if a.IP.IsValid() {
		bits := 32
		if subnet.IsValid() && subnet.Contains(a.IP) {
			bits = subnet.Bits()
		}
		r.IPs = append(r.IPs, &current.IPConfig{
			Address: net.IPNet{IP: net.IP(a.IP.AsSlice()), Mask: net.CIDRMask(bits, 32)}, Gateway: gateway()})
	}
	if a.IPv6.IsValid() {
		r.IPs = append(r.IPs, &current.IPConfig{
			Address: net.IPNet{IP: net.IP(a.IPv6.AsSlice()), Mask: net.CIDRMask(ipv6PrefixBits, 128)}, Gateway: gateway6()})
	}
	return r
}
