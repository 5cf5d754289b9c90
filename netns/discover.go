package netns

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// PodWiring is one pod interface as the node's kernel shows it: what
// `vpcctl state rebuild` recovers when the state file is lost.
type PodWiring struct {
	HostVeth string
	IP       netip.Addr // the /32 route through HostVeth
	IP6      netip.Addr // the /128 route through HostVeth (IPv6 and dual-stack pods)
	EgressIP netip.Addr // the host route into an egress range through another veth into the same namespace (v4if0's or v6if0's)
	Table    int        // the prio 1536 rule's table; 0 for an address of the primary ENI
	Netns    string     // a path to the namespace the veth leads to; "" if none was found
	IfName   string     // the pod side's name in that namespace
	Sandbox  Sandbox    // whose the veth is, as its alias says; zero if it says nothing of ours
}

// NetnsDirs are where named network namespaces are bind-mounted (ip netns,
// containerd, CRI-O); /proc/<pid>/ns/net is searched after them.
var NetnsDirs = []string{"/var/run/netns", "/run/netns"}

// DiscoverPods reads every pod veth of the calling thread's namespace with
// its /32 route and rules, and finds the namespace at its other end: the
// veth's link-netnsid matched against the ids of the named namespaces and of
// every process's namespace.
func DiscoverPods() ([]PodWiring, error) { return DiscoverPodsWith(VethPrefix) }

// DiscoverPodsWith is DiscoverPods for veths named with prefix
// (AWS_VPC_K8S_CNI_VETHPREFIX).
func DiscoverPodsWith(prefix string) ([]PodWiring, error) {
	var out []PodWiring
	err := withHost(func(h *netlink.Handle) error {
		veths, err := listPodVeths(h, prefix)
		if err != nil {
			return err
		}
		routes, err := listPodRoutes(h, veths)
		if err != nil {
			return err
		}
		rules, err := listPodRules(h)
		if err != nil {
			return err
		}
		paths := netnsByID(h)
		egress := egressByNetns(h)
		for _, l := range veths {
			p := PodWiring{HostVeth: l.Attrs().Name, Netns: paths[l.Attrs().NetNsID]}
			p.Sandbox, _ = SandboxOf(l.Attrs().Alias)
			for _, r := range routes {
				switch {
				case r.Veth != p.HostVeth:
				case r.IP.Is4():
					p.IP = r.IP
				default:
					p.IP6 = r.IP
				}
			}
			if l.Attrs().NetNsID >= 0 {
				p.EgressIP = egress[l.Attrs().NetNsID]
			}
			for _, r := range rules {
				if r.Priority == PrioFromPod && r.IP == p.IP && p.IP.IsValid() {
					p.Table = r.Table
				}
			}
			if l.Attrs().NetNsID >= 0 {
				p.IfName = peerName(l.Attrs().NetNsID, l.Attrs().ParentIndex)
			}
			out = append(out, p)
		}
		return nil
	})
	return out, err
}

// egressByNetns maps a namespace's netnsid to the egress address routed
// into it: a host route into an egress range through a veth whose other end
// is there (vpc-cni's EgressVethName, or the reference's egress-cni's
// random veth name, so a migrated pod's v4if0 address is found too).
func egressByNetns(h *netlink.Handle) map[int]netip.Addr {
	out := map[int]netip.Addr{}
	links, err := dump(h.LinkList)
	if err != nil {
		return out
	}
	var veths []netlink.Link
	for _, l := range links {
		if l.Type() == "veth" && l.Attrs().NetNsID >= 0 {
			veths = append(veths, l)
		}
	}
	routes, err := listPodRoutes(h, veths)
	if err != nil {
		return out
	}
	ids := map[string]int{}
	for _, l := range veths {
		ids[l.Attrs().Name] = l.Attrs().NetNsID
	}
	for _, r := range routes {
		if EgressV4Range.Contains(r.IP) || EgressV6Range.Contains(r.IP) {
			out[ids[r.Veth]] = r.IP
		}
	}
	return out
}

// netnsByID maps the netnsids this namespace has given to others onto a
// path for each, a named one first.
func netnsByID(h *netlink.Handle) map[int]string {
	var candidates []string
	for _, dir := range NetnsDirs {
		names, _ := filepath.Glob(filepath.Join(dir, "*"))
		candidates = append(candidates, names...)
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/ns/net")
	candidates = append(candidates, procs...)
	paths := map[int]string{}
	for _, path := range candidates {
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		id, err := h.GetNetNsIdByFd(int(f.Fd()))
		f.Close()
		if _, seen := paths[id]; err == nil && id >= 0 && !seen {
			paths[id] = path
		}
	}
	return paths
}

// peerName is the name of interface index in the namespace this one knows
// as nsid, or "" if the kernel does not say. It asks across namespaces
// (RTM_GETLINK with IFLA_TARGET_NETNSID, Linux 4.15+), which needs
// CAP_NET_ADMIN over that namespace but never enters it: entering (setns)
// needs CAP_SYS_ADMIN, which the long-running DaemonSet container does not
// have. A kernel too old for the attribute answers about this namespace's
// own link of that index without echoing the attribute; that answer is
// ignored.
func peerName(nsid, index int) string {
	req := nl.NewNetlinkRequest(unix.RTM_GETLINK, 0)
	msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
	msg.Index = int32(index)
	req.AddData(msg)
	req.AddData(nl.NewRtAttr(unix.IFLA_TARGET_NETNSID, nl.Uint32Attr(uint32(int32(nsid)))))
	msgs, err := req.Execute(unix.NETLINK_ROUTE, unix.RTM_NEWLINK)
	if err != nil || len(msgs) != 1 || len(msgs[0]) < unix.SizeofIfInfomsg {
		return ""
	}
	attrs, err := nl.ParseRouteAttr(msgs[0][unix.SizeofIfInfomsg:])
	if err != nil {
		return ""
	}
	name, answered := "", false
	for _, a := range attrs {
		switch a.Attr.Type {
		case unix.IFLA_IFNAME:
			name = strings.TrimRight(string(a.Value), "\x00")
		case unix.IFLA_TARGET_NETNSID:
			answered = len(a.Value) == 4 && int32(nl.NativeEndian().Uint32(a.Value)) == int32(nsid)
		}
	}
	if !answered {
		return ""
	}
	return name
}
