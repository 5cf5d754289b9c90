package e2e

import (
	"net"
	"net/netip"
	"testing"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"vpc-cni/netns"
)

// sbr after vpc-cni: it finds our address on CNI_IFNAME with its gateway and
// moves the pod's routes into a source-based table.
func TestPrivilegedSbrChainsAfterVpcCni(t *testing.T) {
	w := newWorld(t, worldOpts{})
	rt := w.runtime(conflist(w.conf(nil), map[string]any{"type": "sbr"}))
	p := w.newPod("sbr")
	res, err := rt.add(p, nil)
	if err != nil {
		t.Fatalf("ADD through [vpc-cni, sbr]: %v", err)
	}
	ip := addrOf(t, res.IPs[0].Address.IP)
	h := handleIn(t, p.ns)
	rules, err := h.RuleList(unix.AF_INET)
	if err != nil {
		t.Fatal(err)
	}
	table := 0
	for _, r := range rules {
		if r.Src != nil && r.Src.IP.Equal(ipOf(ip)) {
			table = r.Table
		}
	}
	if table == 0 {
		t.Fatalf("sbr made no `from %s` rule in the pod: %+v", ip, rules)
	}
	routes, err := h.RouteListFiltered(unix.AF_INET, &netlink.Route{Table: table}, netlink.RT_FILTER_TABLE)
	if err != nil {
		t.Fatal(err)
	}
	if !hasDefaultVia(routes, netns.PodGateway) {
		t.Fatalf("table %d in the pod has no default via %s: %+v", table, netns.PodGateway, routes)
	}
	if err := rt.del(p, nil); err != nil {
		t.Fatalf("DEL: %v", err)
	}
	w.assertNodeClean()
}

// Cilium's generic-veth chaining ignores most of the result: in the pod it
// takes the first veth, its IPv4 address and its peer's ifindex, and needs
// that peer on the node with a /32 route to the pod through it. Do exactly
// that lookup.
func TestPrivilegedGenericVethChainingFindsThePod(t *testing.T) {
	w := newWorld(t, worldOpts{})
	conf := mustJSON(t, w.conf(nil))
	p := w.newPod("cilium")
	res := w.add(p, conf)
	ip := addrOf(t, res.IPs[0].Address.IP)

	links, err := handleIn(t, p.ns).LinkList()
	if err != nil {
		t.Fatal(err)
	}
	var podVeth netlink.Link
	for _, l := range links {
		if l.Type() == "veth" {
			podVeth = l
			break
		}
	}
	if podVeth == nil {
		t.Fatal("no veth in the pod netns")
	}
	addrs, err := handleIn(t, p.ns).AddrList(podVeth, unix.AF_INET)
	if err != nil || len(addrs) != 1 || !addrs[0].IP.Equal(ipOf(ip)) {
		t.Fatalf("the pod's first veth has %v (%v), want %s", addrs, err, ip)
	}
	var peerIndex int
	err = p.ns.Do(func(ns.NetNS) (err error) { // the ethtool query runs where the veth is
		peerIndex, err = netlink.VethPeerIndex(podVeth.(*netlink.Veth))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	w.inNode(func() error {
		host, err := netlink.LinkByIndex(peerIndex)
		if err != nil {
			t.Fatalf("the pod veth's peer %d is not on the node: %v", peerIndex, err)
		}
		routes, err := netlink.RouteGet(ipOf(ip))
		if err != nil || len(routes) == 0 || routes[0].LinkIndex != host.Attrs().Index {
			t.Fatalf("the node routes %s via %+v (%v), want via %s", ip, routes, err, host.Attrs().Name)
		}
		return nil
	})
	w.del(p, conf)
	w.assertNodeClean()
}

func hasDefaultVia(routes []netlink.Route, gw netip.Addr) bool {
	for _, r := range routes {
		isDefault := r.Dst == nil || (r.Dst.IP.Equal(net.IPv4zero) && maskBits(r.Dst) == 0)
		if isDefault && r.Gw.Equal(ipOf(gw)) {
			return true
		}
	}
	return false
}

func maskBits(n *net.IPNet) int {
	ones, _ := n.Mask.Size()
	return ones
}
