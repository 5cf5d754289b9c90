package plugin

import (
	"net"
	"net/netip"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"

	"vpc-cni/netns"
	"vpc-cni/store"
)

var defaultRoute = net.IPNet{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(0, 32)}

func gateway() net.IP { return net.IP(netns.PodGateway.AsSlice()) }

// interfaceResult lists the host veth (no sandbox) first and the pod
// interface second, as bandwidth and portmap expect; the address points at
// the pod interface with the link-local gateway.
func interfaceResult(cfg *Config, args *skel.CmdArgs, a store.Assignment, w netns.Wired) *current.Result {
	return &current.Result{
		CNIVersion: current.ImplementedSpecVersion,
		Interfaces: []*current.Interface{
			{Name: w.HostVeth, Mac: w.HostMAC},
			{Name: w.PodIf, Mac: w.PodMAC, Sandbox: args.Netns},
		},
		IPs: []*current.IPConfig{{
			Interface: current.Int(1),
			Address:   net.IPNet{IP: net.IP(a.IP.AsSlice()), Mask: net.CIDRMask(32, 32)},
			Gateway:   gateway(),
		}},
		Routes: []*types.Route{{Dst: defaultRoute, GW: gateway()}},
	}
}

// ipamResult is what an interface plugin (ptp, bridge, ipvlan) configures:
// the address in the node's subnet, so their "gateway /32 plus subnet via
// gateway" wiring works, and the link-local gateway, which never collides
// with a VPC address. Routing beyond that is theirs.
func ipamResult(cfg *Config, a store.Assignment, subnet netip.Prefix) *current.Result {
	bits := 32
	if subnet.IsValid() && subnet.Contains(a.IP) {
		bits = subnet.Bits()
	}
	return &current.Result{
		CNIVersion: current.ImplementedSpecVersion,
		IPs: []*current.IPConfig{{
			Address: net.IPNet{IP: net.IP(a.IP.AsSlice()), Mask: net.CIDRMask(bits, 32)},
			Gateway: gateway(),
		}},
	}
}
