package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/testutils"

	"vpc-cni/pool"
	"vpc-cni/store"
)

// An ADD that leaves the pool under its target starts a detached `vpcctl
// reconcile`, which refills the pool without waiting for a timer.
func TestPrivilegedAddBelowTargetStartsABackgroundReconcile(t *testing.T) {
	w := newWorld(t, worldOpts{instanceType: "t3.small"}) // WARM_ENI_TARGET=1: the primary ENI's 3 addresses
	if n := w.attachedENIs(); n != 1 {
		t.Fatalf("%d ENIs before the pod, want 1", n)
	}
	w.add(w.newPod("first"), mustJSON(t, w.conf(map[string]any{"backgroundReconcile": true})))
	w.waitFor("a second ENI created by the background reconcile", func() bool { return w.attachedENIs() == 2 })
	w.waitForReconcileToFinish()
	logFile := filepath.Join(w.stateDir, "plugin.log")
	waitBackgroundPasses(t, logFile) // the child logs its summary after it drops the lock
	if log, err := os.ReadFile(logFile); err != nil || !strings.Contains(string(log), `msg="reconcile pass"`) ||
		!strings.Contains(string(log), "CreateNetworkInterface") {
		t.Errorf("the background pass's summary is not in the plugin log (%v):\n%s", err, log)
	}
	w.view(func(tx *store.Tx) error {
		snap, err := tx.Snapshot()
		if err == nil && len(snap.ENIs) != 2 {
			t.Errorf("store knows %d ENIs, EC2 has 2", len(snap.ENIs))
		}
		return err
	})
}

// `vpcctl gc` releases the address of a pod whose netns vanished without a
// DEL and removes its veth, route and rules.
func TestPrivilegedGCCollectsPodsWhoseNetnsIsGone(t *testing.T) {
	w := newWorld(t, worldOpts{})
	conf := mustJSON(t, w.conf(nil))
	gone, kept := w.newPod("gone"), w.newPod("kept")
	w.add(gone, conf)
	w.add(kept, conf)
	_ = gone.ns.Close()
	if err := testutils.UnmountNS(gone.ns); err != nil {
		t.Fatal(err)
	}
	if r := w.vpcctl(nil, "gc"); r.err != nil {
		t.Fatalf("vpcctl gc: %v\n%s%s", r.err, r.stdout, r.stderr)
	}
	all := w.assignments()
	if len(all) != 1 || all[0].ContainerID != kept.id {
		t.Fatalf("assignments after gc: %+v; want only %s", all, kept.id)
	}
	if st := w.hostState(); len(st.Veths) != 1 || st.Veths[0] != kept.hostVeth() {
		t.Fatalf("host veths after gc: %v; want only %s", st.Veths, kept.hostVeth())
	}
	w.del(kept, conf)
	w.assertNodeClean()
}

func (w *world) attachedENIs() int {
	n := 0
	for _, e := range w.sim.State().ENIs {
		if e.DeviceIndex >= 0 {
			n++
		}
	}
	return n
}

// waitFor polls cond (a detached process does the work) with a generous
// deadline; it asserts the outcome, not how fast it came.
func (w *world) waitFor(what string, cond func() bool) {
	w.tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			w.tb.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitForReconcileToFinish takes and drops the reconcile lock.
func (w *world) waitForReconcileToFinish() {
	w.tb.Helper()
	st, err := store.Open(w.stateDir, store.Options{})
	if err != nil {
		w.tb.Fatal(err)
	}
	unlock, ok, err := st.LockReconcile(true, 30*time.Second)
	if err != nil || !ok {
		w.tb.Fatalf("reconcile lock: %v", err)
	}
	unlock()
}

// A burst of ADDs made while another pass holds the reconcile lock starts one
// background pass, not one per ADD (the refill claim), and that pass still
// runs once the lock is free: it waits for the lock instead of giving up.
func TestPrivilegedBurstStartsOneBackgroundReconcileThatWaitsForTheLock(t *testing.T) {
	w := newWorld(t, worldOpts{instanceType: "t3.small"}) // the primary ENI's 3 addresses free
	st, err := store.Open(w.stateDir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	unlock, ok, err := st.LockReconcile(false, 0)
	if err != nil || !ok {
		t.Fatalf("taking the reconcile lock: %v %v", ok, err)
	}
	defer unlock()
	conf := mustJSON(t, w.conf(map[string]any{"backgroundReconcile": true}))
	for i := range 3 {
		w.add(w.newPod(fmt.Sprintf("burst-%d", i)), conf) // each leaves the pool under WARM_ENI_TARGET=1
	}
	logFile := filepath.Join(w.stateDir, "plugin.log")
	log, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(startedRe.FindAll(log, -1)); n != 1 {
		t.Fatalf("3 ADDs under target started %d background passes, want 1:\n%s", n, log)
	}
	if n := w.attachedENIs(); n != 1 {
		t.Fatalf("%d ENIs while the lock is held, want 1", n)
	}
	unlock()
	t.Cleanup(func() {
		if t.Failed() {
			log, _ := os.ReadFile(logFile)
			t.Logf("plugin log:\n%s", log)
		}
	})
	w.waitFor("the waiting background pass to create the second ENI", func() bool { return w.attachedENIs() == 2 })
	waitBackgroundPasses(t, logFile)
}

// A burst of ADDs with the lock free is refilled by two passes: the first
// low ADD's, which plans at once, and one that gathers the rest of the burst
// (store.RefillQuiet) and plans once it is over, rather than each pass
// planning at once and leaving the ADDs after it to the next.
func TestPrivilegedBurstIsRefilledByTwoPasses(t *testing.T) {
	const burst = 12
	w := newWorld(t, worldOpts{instanceType: "c5.4xlarge", env: []string{"WARM_IP_TARGET=" + fmt.Sprint(burst), "IP_COOLDOWN_PERIOD=0"}})
	conf := mustJSON(t, w.conf(map[string]any{"backgroundReconcile": true}))
	pods := make([]*pod, burst)
	for i := range pods {
		pods[i] = w.newPod(fmt.Sprintf("burst-%d", i))
	}
	w.sim.ResetCounters()
	for _, p := range pods { // one after another, each leaving the pool under its target
		w.add(p, conf)
	}
	logFile := filepath.Join(w.stateDir, "plugin.log")
	w.waitFor("the pool back at its target", func() bool {
		var full bool
		w.view(func(tx *store.Tx) (err error) {
			full, err = tx.AvailableAtLeast(burst, time.Now(), pool.Config{})
			return err
		})
		return full
	})
	waitBackgroundPasses(t, logFile)
	log, _ := os.ReadFile(logFile)
	if n := len(startedRe.FindAll(log, -1)); n > 2 {
		t.Errorf("a burst of %d ADDs started %d background passes, want at most 2:\n%s", burst, n, log)
	}
	if n := w.sim.Counters()["AssignPrivateIpAddresses"]; n > 2 {
		t.Errorf("the burst was refilled with %d AssignPrivateIpAddresses, want at most 2", n)
	}
}
