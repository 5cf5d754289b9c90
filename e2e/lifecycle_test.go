package e2e

import (
	"errors"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/plugins/pkg/testutils"
)

// ADD twice for the same container and interface gives the same address
// and leaves the wiring whole.
func TestPrivilegedAddTwiceSameAddress(t *testing.T) {
	w := newWorld(t, worldOpts{})
	conf := mustJSON(t, w.conf(nil))
	p := w.newPod("twice")
	first := w.add(p, conf)
	second := w.add(p, conf)
	if !first.IPs[0].Address.IP.Equal(second.IPs[0].Address.IP) {
		t.Fatalf("second ADD gave %s, first %s", second.IPs[0].Address.IP, first.IPs[0].Address.IP)
	}
	if n := len(w.assignments()); n != 1 {
		t.Fatalf("%d assignments after two ADDs, want 1", n)
	}
	w.assertWiring(p, addrOf(t, first.IPs[0].Address.IP), 0)
	if r := w.cni("CHECK", p, withPrev(t, w.conf(nil), second)); r.err != nil {
		t.Errorf("CHECK after the second ADD: %v %s", r.err, r.stdout)
	}
	w.del(p, conf)
	w.del(p, conf)
	w.assertNodeClean()
}

// DEL succeeds when there is nothing to delete, and when the pod's netns is
// already gone (the address is still released).
func TestPrivilegedDelWhenThingsAreGone(t *testing.T) {
	w := newWorld(t, worldOpts{})
	conf := mustJSON(t, w.conf(nil))
	w.del(w.newPod("never-added"), conf)

	p := w.newPod("gone")
	w.add(p, conf)
	_ = p.ns.Close()
	if err := testutils.UnmountNS(p.ns); err != nil {
		t.Fatal(err)
	}
	w.del(p, conf)
	w.del(p, conf)
	w.waitNoVeths() // DEL leaves the pair to the namespace's end, which the kernel finishes asynchronously
	w.assertNodeClean()
}

// GC releases every assignment the runtime does not list: one pod added
// through libcni (its cache makes libcni DEL it first) and two exec'd
// directly (only our GC knows them). The valid pod keeps its address and
// wiring.
func TestPrivilegedGCReleasesTheRest(t *testing.T) {
	w := newWorld(t, worldOpts{})
	rt := w.runtime(conflist(w.conf(nil)))
	keep, cached := w.newPod("keep"), w.newPod("cached")
	for _, p := range []*pod{keep, cached} {
		if _, err := rt.add(p, nil); err != nil {
			t.Fatal(err)
		}
	}
	conf := mustJSON(t, w.conf(nil))
	for _, name := range []string{"stale-1", "stale-2"} {
		w.add(w.newPod(name), conf)
	}
	if err := rt.gc(keep); err != nil {
		t.Fatalf("GC: %v", err)
	}
	all := w.assignments()
	if len(all) != 1 || all[0].ContainerID != keep.id {
		t.Fatalf("after GC: %+v, want only %s", all, keep.id)
	}
	w.assertWiring(keep, all[0].IP, 0)
	if st := w.hostState(); len(st.Veths) != 1 || len(st.Routes) != 1 || len(st.Rules) != 1 {
		t.Errorf("after GC the node holds %+v, want the kept pod's veth, route and rule only", st)
	}
	w.checkStore()
}

// STATUS answers "can this node start pods": success on a node that can
// serve, is busy or is full (containerd 2.x makes a STATUS error a NotReady
// node, and Kubernetes then evicts its pods); a full node's ADD fails with
// code 11 naming what is full.
func TestPrivilegedStatus(t *testing.T) {
	targets := []string{"WARM_IP_TARGET=1", "MAX_PODS=2"}
	w := newWorld(t, worldOpts{env: targets})
	grow := w.runtime(conflist(w.conf(nil)))
	noGrow := w.runtime(conflist(w.conf(map[string]any{"inlineGrow": false})))
	conf := mustJSON(t, w.conf(nil))
	expectStatus(t, grow, 0, "one free address")

	w.add(w.newPod("a"), conf)
	expectStatus(t, noGrow, 0, "pool empty, inline grow off: busy")
	expectStatus(t, grow, 0, "pool empty, inline grow can add one")

	w.add(w.newPod("b"), conf) // grows inline to MAX_PODS
	expectStatus(t, grow, 0, "max pods reached: full")
	expectStatus(t, noGrow, 0, "max pods reached: full")

	r := w.cni("ADD", w.newPod("c"), conf)
	if e := cniError(t, r); e.Code != types.ErrTryAgainLater || !strings.Contains(e.Msg, "the node is full: it holds 2 addresses, its max pods (2;") {
		t.Errorf("ADD beyond max pods: code %d %q, want 11 naming max pods", e.Code, e.Msg)
	}
}

func expectStatus(t *testing.T, rt *runtime, code uint, when string) {
	t.Helper()
	err := rt.status()
	var te *types.Error
	switch {
	case code == 0 && err != nil:
		t.Errorf("STATUS (%s): %v, want success", when, err)
	case code != 0 && (!errors.As(err, &te) || te.Code != code):
		t.Errorf("STATUS (%s): %v, want code %d", when, err, code)
	}
}
