package e2e

import (
	"fmt"
	"net/netip"
	"testing"

	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/vishvananda/netlink"

	"vpc-cni/store"
)

// chainList is the chained conflist: vpc-cni, then portmap, bandwidth
// and tuning, each with what it needs from our result.
func (w *world) chainList(extra map[string]any) map[string]any {
	return conflist(w.conf(extra),
		map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}, "snat": true},
		map[string]any{"type": "bandwidth", "capabilities": map[string]bool{"bandwidth": true}},
		map[string]any{"type": "tuning", "sysctl": map[string]string{"net.ipv4.conf.eth0.rp_filter": "2"}})
}

func chainCaps(i int) map[string]any {
	return map[string]any{
		"portMappings": []map[string]any{{"hostPort": 18080 + i, "containerPort": 80, "protocol": "tcp"}},
		"bandwidth": map[string]any{"ingressRate": 8_000_000, "ingressBurst": 800_000,
			"egressRate": 8_000_000, "egressBurst": 800_000},
	}
}

// libcni drives ADD, CHECK and DEL through the whole chain on a t3.small:
// three pods fill the primary ENI, the fourth makes ADD grow the pool inline
// onto a secondary ENI. Wiring, traffic, every chained plugin's effect, and
// a clean node afterwards.
func TestPrivilegedChainAddCheckDel(t *testing.T) {
	w := newWorld(t, worldOpts{})
	rt := w.runtime(w.chainList(nil))
	var pods []*pod
	for i := range 4 {
		p := w.newPod(fmt.Sprintf("web-%d", i))
		res, err := rt.add(p, chainCaps(i))
		if err != nil {
			t.Fatalf("ADD %s: %v", p.name, err)
		}
		assertChainResult(t, p, res)
		pods = append(pods, p)
	}
	held := w.assignmentsByKey()
	for i, p := range pods {
		a := held[p.id+"/"+p.ifname]
		wantDev := 0
		if i == 3 {
			wantDev = 1
		}
		if a.DeviceIndex != wantDev {
			t.Fatalf("pod %d on device %d, want %d (primary ENI holds 3 addresses on a t3.small)", i, a.DeviceIndex, wantDev)
		}
		w.assertWiring(p, a.IP, tableOf(a))
		w.assertBandwidth(p)
		if got := readSysctl(t, p.ns, "net/ipv4/conf/eth0/rp_filter"); got != "2" {
			t.Errorf("tuning: rp_filter in pod %s is %s, want 2", p.name, got)
		}
		if err := rt.check(p, chainCaps(i)); err != nil {
			t.Errorf("CHECK %s: %v", p.name, err)
		}
	}
	w.assertTraffic(pods, held)
	assertCheckNoticesBrokenWiring(t, w, rt, pods[0])
	for i, p := range pods {
		if err := rt.del(p, chainCaps(i)); err != nil {
			t.Fatalf("DEL %s: %v", p.name, err)
		}
	}
	w.assertNodeClean()
}

// assertChainResult: the host veth (no sandbox) and the pod interface are
// listed and the address points at the pod interface, as portmap and
// bandwidth need; bandwidth appended its ifb.
func assertChainResult(t *testing.T, p *pod, res *current.Result) {
	t.Helper()
	if len(res.Interfaces) < 2 || res.Interfaces[0].Name != p.hostVeth() || res.Interfaces[0].Sandbox != "" ||
		res.Interfaces[1].Name != p.ifname || res.Interfaces[1].Sandbox != p.ns.Path() {
		t.Fatalf("result interfaces %+v: want host veth %s then %s in %s", res.Interfaces, p.hostVeth(), p.ifname, p.ns.Path())
	}
	if len(res.IPs) != 1 || res.IPs[0].Interface == nil || *res.IPs[0].Interface != 1 {
		t.Fatalf("result IPs %+v: want one address on interface 1", res.IPs)
	}
	if len(res.Interfaces) != 3 {
		t.Errorf("result has %d interfaces, want 3 (bandwidth's ifb appended)", len(res.Interfaces))
	}
}

func (w *world) assignmentsByKey() map[string]store.Assignment {
	m := map[string]store.Assignment{}
	for _, a := range w.assignments() {
		m[a.Key] = a
	}
	return m
}

func tableOf(a store.Assignment) int {
	if a.DeviceIndex == 0 {
		return 0
	}
	return a.DeviceIndex + 1
}

// assertBandwidth: bandwidth put a tbf qdisc on the host veth (ingress
// shaping of the pod).
func (w *world) assertBandwidth(p *pod) {
	w.tb.Helper()
	h := handleIn(w.tb, w.node)
	veth, err := h.LinkByName(p.hostVeth())
	if err != nil {
		w.tb.Fatal(err)
	}
	qdiscs, err := h.QdiscList(veth)
	if err != nil {
		w.tb.Fatal(err)
	}
	for _, q := range qdiscs {
		if _, ok := q.(*netlink.Tbf); ok {
			return
		}
	}
	w.tb.Errorf("no tbf qdisc on %s: %v", p.hostVeth(), qdiscs)
}

// assertTraffic pings pod to pod (primary ENI and secondary ENI, both ways)
// and node to pod.
func (w *world) assertTraffic(pods []*pod, held map[string]store.Assignment) {
	w.tb.Helper()
	ip := func(p *pod) netip.Addr { return held[p.id+"/"+p.ifname].IP }
	first, last := pods[0], pods[len(pods)-1]
	for _, path := range []struct {
		from *pod
		to   *pod
	}{{first, last}, {last, first}, {first, pods[1]}} {
		if err := ping(path.from.ns, ip(path.to)); err != nil {
			w.tb.Errorf("ping %s -> %s: %v", path.from.name, path.to.name, err)
		}
	}
	for _, p := range []*pod{first, last} {
		if err := ping(w.node, ip(p)); err != nil {
			w.tb.Errorf("ping node -> %s: %v", p.name, err)
		}
	}
}

// assertCheckNoticesBrokenWiring: CHECK must be able to fail.
func assertCheckNoticesBrokenWiring(t *testing.T, w *world, rt *runtime, p *pod) {
	t.Helper()
	h := handleIn(t, p.ns)
	link, err := h.LinkByName(p.ifname)
	if err != nil {
		t.Fatal(err)
	}
	neighs, err := h.NeighList(link.Attrs().Index, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range neighs {
		if n.State == netlink.NUD_PERMANENT {
			if err := h.NeighDel(&n); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := rt.check(p, chainCaps(0)); err == nil {
		t.Error("CHECK passed with the pod's gateway neighbour deleted")
	}
}

// assertNodeClean: no pod veths, rules or routes left, no assignment, and
// the store's invariants hold.
func (w *world) assertNodeClean() {
	w.tb.Helper()
	if st := w.hostState(); len(st.Veths)+len(st.Rules)+len(st.Routes) > 0 {
		w.tb.Errorf("left on the node: %+v", st)
	}
	if all := w.assignments(); len(all) > 0 {
		w.tb.Errorf("assignments left: %+v", all)
	}
	w.checkStore()
}
