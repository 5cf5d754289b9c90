package e2e

import (
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/pkg/types"

	"vpc-cni/sim/ec2sim"
)

// fillPrimary takes the primary ENI's free addresses (t3.small: 3), so the
// next ADD needs a new ENI.
func (w *world) fillPrimary(conf []byte) {
	w.tb.Helper()
	for i := range 3 {
		w.add(w.newPod("fill"+string(rune('a'+i))), conf)
	}
	if n := w.attachedENIs(); n != 1 {
		w.tb.Fatalf("%d ENIs attached after filling the primary, want 1", n)
	}
}

// A new ENI's link arrives seconds after its attach on a real node. An ADD
// whose inline grow created the ENI waits for the link within its deadline,
// sets up the ENI's host side itself and takes the address.
func TestPrivilegedAddWaitsForALateLink(t *testing.T) {
	w := newWorld(t, worldOpts{instanceType: "t3.small"})
	conf := mustJSON(t, w.conf(nil)) // ADD deadline: the default 60 s
	w.fillPrimary(conf)
	w.sim.SetFaults(ec2sim.Faults{LinkDelay: 3 * time.Second})
	late := w.newPod("late")
	res := w.add(late, conf)
	ip, _ := netip.AddrFromSlice(res.IPs[0].Address.IP.To4())
	st := w.sim.State()
	if len(st.ENIs) < 2 || !st.ENIs[1].Linked || !slices.Contains(st.ENIs[1].Secondary, ip) {
		t.Fatalf("the pod got %v; want an address of the new, linked ENI at device 1: %+v", ip, st.ENIs)
	}
	held := false
	for _, a := range w.assignments() {
		held = held || a.IP == ip && a.ENIID == st.ENIs[1].ID
	}
	if !held {
		t.Errorf("the store does not hold %v on %s", ip, st.ENIs[1].ID)
	}
	w.assertWiring(late, ip, 2)
	if log, _ := os.ReadFile(filepath.Join(w.stateDir, "plugin.log")); !strings.Contains(string(log), "late link set up") {
		t.Errorf("the plugin log does not say it waited for the link:\n%s", log)
	}
}

// An ADD whose deadline passes before the link comes fails with code 11,
// naming the ENI and its MAC and saying it waited for the link; it holds no
// address.
func TestPrivilegedAddPastItsDeadlineSaysItWaitedForTheLink(t *testing.T) {
	w := newWorld(t, worldOpts{instanceType: "t3.small"})
	conf := mustJSON(t, w.conf(nil))
	w.fillPrimary(conf)
	w.sim.SetFaults(ec2sim.Faults{LinkDelay: time.Minute}) // the link comes well after the deadline
	short := mustJSON(t, w.conf(map[string]any{"timeouts": map[string]any{"add": "4s"}}))
	r := w.cni("ADD", w.newPod("late"), short)
	e := cniError(t, r)
	st := w.sim.State()
	if len(st.ENIs) < 2 || st.ENIs[1].Linked {
		t.Fatalf("ENIs %+v; want a new one at device 1 whose link has not come", st.ENIs)
	}
	eni := st.ENIs[1] // the grow sized to the targets may have made more; each is named
	t.Logf("ADD past its deadline: %s", e.Msg)
	if e.Code != types.ErrTryAgainLater || !strings.Contains(e.Msg, "waited") ||
		!strings.Contains(e.Msg, "link of "+eni.ID) || !strings.Contains(e.Msg, eni.MAC) {
		t.Errorf("ADD past its deadline: code %d %q; want 11 saying it waited for the link of %s (MAC %s)",
			e.Code, e.Msg, eni.ID, eni.MAC)
	}
	if n := len(w.assignments()); n != 3 {
		t.Errorf("%d assignments, want the 3 filling pods'", n)
	}
}
