package e2e

import (
	"bytes"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"vpc-cni/netns"
)

// handleIn opens a netlink socket inside n without switching any thread,
// closed when the test ends.
func handleIn(tb testing.TB, n ns.NetNS) *netlink.Handle {
	tb.Helper()
	h := openHandleIn(tb, n)
	tb.Cleanup(h.Close)
	return h
}

// openHandleIn is handleIn for the caller to close: an open socket holds
// its namespace, and a pod's must go when the runtime deletes it.
func openHandleIn(tb testing.TB, n ns.NetNS) *netlink.Handle {
	tb.Helper()
	h, err := netlink.NewHandleAt(vnetns.NsHandle(n.Fd()))
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

func ipOf(a netip.Addr) net.IP { return net.IP(a.AsSlice()) }

func addrOf(tb testing.TB, ip net.IP) netip.Addr {
	tb.Helper()
	a, ok := netip.AddrFromSlice(ip.To4())
	if !ok {
		tb.Fatalf("not an IPv4 address: %v", ip)
	}
	return a
}

func is32(n *net.IPNet, a netip.Addr) bool {
	if n == nil {
		return false
	}
	ones, _ := n.Mask.Size()
	return ones == 32 && n.IP.Equal(ipOf(a))
}

// assertWiring checks the routed-ENI wiring (netns's package doc) of p holding ip; table
// is 0 for the primary ENI, else the secondary ENI's device index + 1.
func (w *world) assertWiring(p *pod, ip netip.Addr, table int) {
	w.tb.Helper()
	host, podH := openHandleIn(w.tb, w.node), openHandleIn(w.tb, p.ns)
	defer host.Close()
	defer podH.Close()
	veth, err := host.LinkByName(p.hostVeth())
	if err != nil {
		w.tb.Fatalf("host veth %s: %v", p.hostVeth(), err)
	}
	podIf, err := podH.LinkByName(p.ifname)
	if err != nil {
		w.tb.Fatalf("pod interface %s: %v", p.ifname, err)
	}
	if podIf.Type() != "veth" || podIf.Attrs().ParentIndex != veth.Attrs().Index {
		w.tb.Errorf("pod %s is a %s with peer %d, want the veth peer of %s (%d)",
			p.ifname, podIf.Type(), podIf.Attrs().ParentIndex, p.hostVeth(), veth.Attrs().Index)
	}
	assertPodSide(w.tb, podH, podIf, ip, veth.Attrs().HardwareAddr)
	assertHostSide(w.tb, host, veth, ip, table)
}

func assertPodSide(tb testing.TB, h *netlink.Handle, link netlink.Link, ip netip.Addr, hostMAC net.HardwareAddr) {
	tb.Helper()
	addrs, err := h.AddrList(link, unix.AF_INET)
	if err != nil {
		tb.Fatal(err)
	}
	if len(addrs) != 1 || !is32(addrs[0].IPNet, ip) {
		tb.Errorf("pod addresses %v, want only %s/32", addrs, ip)
	}
	routes, err := h.RouteList(link, unix.AF_INET)
	if err != nil {
		tb.Fatal(err)
	}
	var gwLink, deflt bool
	for _, r := range routes {
		gwLink = gwLink || (is32(r.Dst, netns.PodGateway) && r.Scope == netlink.SCOPE_LINK)
		isDefault := r.Dst == nil || r.Dst.String() == "0.0.0.0/0"
		deflt = deflt || (isDefault && r.Gw.Equal(ipOf(netns.PodGateway)))
	}
	if !gwLink || !deflt {
		tb.Errorf("pod routes %v: want 169.254.1.1/32 scope link (%v) and default via 169.254.1.1 (%v)", routes, gwLink, deflt)
	}
	neighs, err := h.NeighList(link.Attrs().Index, unix.AF_INET)
	if err != nil {
		tb.Fatal(err)
	}
	var neigh bool
	for _, n := range neighs {
		neigh = neigh || (n.IP.Equal(ipOf(netns.PodGateway)) && n.State == netlink.NUD_PERMANENT &&
			bytes.Equal(n.HardwareAddr, hostMAC))
	}
	if !neigh {
		tb.Errorf("pod neighbours %v: want 169.254.1.1 lladdr %s PERMANENT", neighs, hostMAC)
	}
}

func assertHostSide(tb testing.TB, h *netlink.Handle, veth netlink.Link, ip netip.Addr, table int) {
	tb.Helper()
	routes, err := h.RouteListFiltered(unix.AF_INET, &netlink.Route{Table: unix.RT_TABLE_MAIN, LinkIndex: veth.Attrs().Index},
		netlink.RT_FILTER_TABLE|netlink.RT_FILTER_OIF)
	if err != nil {
		tb.Fatal(err)
	}
	var route bool
	for _, r := range routes {
		route = route || is32(r.Dst, ip)
	}
	if !route {
		tb.Errorf("host routes via %s %v: want %s/32", veth.Attrs().Name, routes, ip)
	}
	rules, err := h.RuleList(unix.AF_INET)
	if err != nil {
		tb.Fatal(err)
	}
	var to, from int
	for _, r := range rules {
		if r.Priority == netns.PrioToPod && is32(r.Dst, ip) && r.Table == unix.RT_TABLE_MAIN {
			to++
		}
		if r.Priority == netns.PrioFromPod && is32(r.Src, ip) {
			from++
			if r.Table != table {
				tb.Errorf("rule from %s lookup %d, want table %d", ip, r.Table, table)
			}
		}
	}
	wantFrom := 0
	if table > 0 {
		wantFrom = 1
	}
	if to != 1 || from != wantFrom {
		tb.Errorf("rules for %s: %d 'to … lookup main' at 512 (want 1), %d 'from' at 1536 (want %d)", ip, to, from, wantFrom)
	}
}

// hostState lists the pod veths, rules and routes left in the node netns,
// without the pairs DEL left to their namespace's deletion (detached): a
// veth into a namespace that a path still names, with no route through it.
// Tests keep their pods' namespaces after DEL; the runtime deletes them.
func (w *world) hostState() netns.HostState {
	w.tb.Helper()
	return withoutDetached(w.rawHostState())
}

// rawHostState is everything ListHost shows, detached pairs included.
func (w *world) rawHostState() netns.HostState {
	w.tb.Helper()
	var st netns.HostState
	w.inNode(func() (err error) { st, err = netns.ListHost(); return err })
	return st
}

// withoutDetached drops from st's Veths and Live the live veths with no
// route that are not orphans.
func withoutDetached(st netns.HostState) netns.HostState {
	keep := map[string]bool{}
	for _, r := range st.Routes {
		keep[r.Veth] = true
	}
	for _, v := range st.Orphans {
		keep[v] = true
	}
	detached := func(v string) bool { return slices.Contains(st.Live, v) && !keep[v] }
	st.Veths = slices.DeleteFunc(st.Veths, detached)
	st.Live = slices.DeleteFunc(st.Live, detached)
	return st
}

// waitNoVeths waits until no pod veth is left in the node namespace (the
// kernel destroys a deleted namespace's pairs asynchronously) and reports
// those still there after a minute.
func (w *world) waitNoVeths() {
	w.tb.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		st := w.rawHostState()
		if len(st.Veths) == 0 {
			return
		}
		if time.Now().After(deadline) {
			w.tb.Errorf("pod veths still on the node a minute after their namespaces were deleted: %v", st.Veths)
			return
		}
		time.Sleep(20 * time.Millisecond) // polling a condition: the kernel's namespace cleanup sends no event here
	}
}

// readSysctl reads a sysctl inside n, e.g. "net/ipv4/conf/eth0/rp_filter".
func readSysctl(tb testing.TB, n ns.NetNS, key string) string {
	tb.Helper()
	var v []byte
	err := n.Do(func(ns.NetNS) (err error) {
		v, err = os.ReadFile(filepath.Join("/proc/sys", key))
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return strings.TrimSpace(string(v))
}

// ping sends one ICMP echo from inside n to dst and waits for the reply.
func ping(n ns.NetNS, dst netip.Addr) error {
	return n.Do(func(ns.NetNS) error {
		_, err := netns.Ping(dst, 3*time.Second)
		return err
	})
}
