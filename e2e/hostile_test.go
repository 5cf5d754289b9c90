package e2e

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/types"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"vpc-cni/internal/testsupport/testenv"
	"vpc-cni/sim/ec2sim"
)

// The plugin never wires the namespace it runs in. A runtime that passes
// the node's own namespace (by its path or as /proc/self/ns/net), or a path
// that is no network namespace, gets code 4 from ADD and CHECK with nothing
// taken, and a DEL that exits 0; the node's links, addresses, routes and
// rules, the state file and the emulator stay as they were.
func TestPrivilegedThePluginNeverWiresTheNode(t *testing.T) {
	w := newWorld(t, worldOpts{})
	w.addNodeDefaultRoute()
	file := filepath.Join(t.TempDir(), "netns-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	conf := mustJSON(t, w.conf(nil))
	cases := []struct{ name, netns, msg string }{
		{"the node's path", w.node.Path(), "own network namespace (the node's)"},
		{"/proc/self/ns/net", "/proc/self/ns/net", "own network namespace (the node's)"},
		{"a regular file", file, "is not a network namespace (it is a regular file)"},
		{"a directory", filepath.Dir(file), "is not a network namespace (it is a directory)"},
		{"a mount namespace", "/proc/self/ns/mnt", "is not a network namespace (it is a mount namespace)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := w.newPod("hostile")
			node, state, sim := w.nodeDump(), w.stateHash(), w.sim.State()
			for _, verb := range []string{"ADD", "CHECK"} {
				r := w.execInNode(bin("vpc-cni"), setEnv(p.env(verb), "CNI_NETNS", tc.netns), conf)
				e := cniError(t, r)
				if e.Code != types.ErrInvalidEnvironmentVariables || !strings.Contains(e.Msg, tc.msg) || r.state.ExitCode() != 1 {
					t.Errorf("%s: exit %d, code %d %q; want exit 1, code 4 mentioning %q", verb, r.state.ExitCode(), e.Code, e.Msg, tc.msg)
				}
			}
			r := w.execInNode(bin("vpc-cni"), setEnv(p.env("DEL"), "CNI_NETNS", tc.netns), conf)
			if r.err != nil || len(r.stdout) != 0 {
				t.Errorf("DEL: %v, stdout %s stderr %s", r.err, r.stdout, r.stderr)
			}
			w.assertUnchanged(node, state, sim)
		})
	}
	if n := len(w.assignments()); n != 0 {
		t.Errorf("%d assignments after refused ADDs", n)
	}
}

// A pod whose DEL comes with the node's namespace (a runtime's mix-up)
// still gets its address back and its node side removed, and the node keeps
// everything else: its default route above all.
func TestPrivilegedDelWithTheNodesNamespaceReleasesAndKeepsTheNode(t *testing.T) {
	w := newWorld(t, worldOpts{})
	w.addNodeDefaultRoute()
	conf := mustJSON(t, w.conf(nil))
	p := w.newPod("mixup")
	node := w.nodeDump()
	w.add(p, conf)
	r := w.execInNode(bin("vpc-cni"), setEnv(p.env("DEL"), "CNI_NETNS", w.node.Path()), conf)
	if r.err != nil {
		t.Fatalf("DEL: %v, stdout %s stderr %s", r.err, r.stdout, r.stderr)
	}
	if n := len(w.assignments()); n != 0 {
		t.Fatalf("%d assignments after DEL", n)
	}
	testenv.DeleteNetNS(p.ns) // the runtime's, after DEL: the pair goes with it
	w.waitNoVeths()
	if after := w.nodeDump(); !slices.Equal(after, node) {
		t.Errorf("the node changed:\n%s", diffLines(node, after))
	}
	w.checkStore()
}

// A 40,000-character container ID is refused up front with code 4, not
// deep in the store; its DEL succeeds and changes nothing.
func TestPrivilegedAHugeContainerIDIsRefusedUpFront(t *testing.T) {
	w := newWorld(t, worldOpts{})
	conf := mustJSON(t, w.conf(nil))
	p := w.newPod("huge")
	p.id = strings.Repeat("a", 40000)
	node, state, sim := w.nodeDump(), w.stateHash(), w.sim.State()
	e := cniError(t, w.cni("ADD", p, conf))
	if e.Code != types.ErrInvalidEnvironmentVariables || !strings.Contains(e.Msg, "CNI_CONTAINERID is 40000 characters long; at most 256") {
		t.Errorf("code %d %q, want 4 naming CNI_CONTAINERID's length", e.Code, e.Msg)
	}
	if r := w.cni("DEL", p, conf); r.err != nil {
		t.Errorf("DEL: %v, stdout %s", r.err, r.stdout)
	}
	w.assertUnchanged(node, state, sim)
}

func (w *world) assertUnchanged(node []string, state [32]byte, sim ec2sim.State) {
	w.tb.Helper()
	if after := w.nodeDump(); !slices.Equal(after, node) {
		w.tb.Errorf("the node changed:\n%s", diffLines(node, after))
	}
	if w.stateHash() != state {
		w.tb.Error("the state file changed")
	}
	if !reflect.DeepEqual(w.sim.State(), sim) {
		w.tb.Error("the emulator's state changed")
	}
}

// addNodeDefaultRoute gives the node netns an uplink (a veth pair: this
// kernel has no dummy links) and a default route,
// the route the plugin once replaced when handed the node as a pod.
func (w *world) addNodeDefaultRoute() {
	w.tb.Helper()
	h := handleIn(w.tb, w.node)
	up := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "uplink0"}, PeerName: "uplink0p"}
	if err := h.LinkAdd(up); err != nil {
		w.tb.Fatal(err)
	}
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: net.IPv4(100, 127, 0, 2), Mask: net.CIDRMask(24, 32)}}
	if err := h.AddrAdd(up, addr); err != nil {
		w.tb.Fatal(err)
	}
	if err := h.LinkSetUp(up); err != nil {
		w.tb.Fatal(err)
	}
	def := &netlink.Route{LinkIndex: up.Attrs().Index, Gw: net.IPv4(100, 127, 0, 1)}
	if err := h.RouteAdd(def); err != nil {
		w.tb.Fatal(err)
	}
}

// nodeDump lists the node netns's links, addresses, IPv4 routes of every
// table and rules, one sorted line each.
func (w *world) nodeDump() []string {
	w.tb.Helper()
	h := handleIn(w.tb, w.node)
	var out []string
	links, err := h.LinkList()
	if err != nil {
		w.tb.Fatal(err)
	}
	for _, l := range links {
		a := l.Attrs()
		out = append(out, fmt.Sprintf("link %d %s %s mtu %d %v master %d", a.Index, a.Name, l.Type(), a.MTU, a.Flags, a.MasterIndex))
		addrs, err := h.AddrList(l, unix.AF_INET)
		if err != nil {
			w.tb.Fatal(err)
		}
		for _, ad := range addrs {
			out = append(out, fmt.Sprintf("addr %s %s", a.Name, ad.IPNet))
		}
	}
	routes, err := h.RouteListFiltered(unix.AF_INET, &netlink.Route{Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE)
	if err != nil {
		w.tb.Fatal(err)
	}
	for _, r := range routes {
		out = append(out, "route "+r.String())
	}
	rules, err := h.RuleList(unix.AF_INET)
	if err != nil {
		w.tb.Fatal(err)
	}
	for _, r := range rules {
		out = append(out, fmt.Sprintf("rule %d from %v to %v table %d mark %d iif %q oif %q", r.Priority, r.Src, r.Dst, r.Table, r.Mark, r.IifName, r.OifName))
	}
	slices.Sort(out)
	return out
}

// diffLines says which lines went and which came.
func diffLines(before, after []string) string {
	var b strings.Builder
	for _, l := range before {
		if !slices.Contains(after, l) {
			b.WriteString("- " + l + "\n")
		}
	}
	for _, l := range after {
		if !slices.Contains(before, l) {
			b.WriteString("+ " + l + "\n")
		}
	}
	return b.String()
}
