package e2e

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	current "github.com/containernetworking/cni/pkg/types/100"

	"vpc-cni/sim/ec2sim"
	"vpc-cni/store"
)

// An ADD held between its take and its wiring while state.db is lost and a
// rebuild makes a new one (which holds the pod's address free: the pod is
// not wired yet) records its pod in the new file before it reports
// success. Passes that then shrink the pool release neither the pod's
// address nor its ENI, and the store keeps the pod.
func TestPrivilegedAddAcrossALostStateRecordsItsPod(t *testing.T) {
	t.Run("minimum ip target", func(t *testing.T) {
		w := newWorld(t, worldOpts{instanceType: "t3.small", env: []string{"WARM_IP_TARGET=3", "IP_COOLDOWN_PERIOD=0"}})
		rt, sx := w.stoppingRuntime(atSetns())
		rt.startPods("run", 1) // the minimum: every free address is excess
		p, a := w.addAcrossLostState(rt, sx)
		w.writeConfig([]string{"MINIMUM_IP_TARGET=1", "RELEASE_DELAY=1s", "IP_COOLDOWN_PERIOD=0"})
		w.passesPastReleaseDelay(3 * time.Second)
		w.assertNotReleased(p, a)
		if !slices.ContainsFunc(w.sim.Releases(), func(r ec2sim.Release) bool { return r.Action == "UnassignPrivateIpAddresses" }) {
			t.Fatal("the passes released no address: the pool did not shrink, so the test proves nothing")
		}
	})
	t.Run("whole ENI alone on a secondary ENI", func(t *testing.T) {
		w := newWorld(t, worldOpts{instanceType: "t3.small", env: []string{"IP_COOLDOWN_PERIOD=0", "RELEASE_DELAY=1s"}})
		rt, sx := w.stoppingRuntime(atSetns())
		first := rt.startPods("primary", 3) // the primary ENI's pod addresses
		w.reconcileUntilSettled()           // a warm secondary ENI
		p, a := w.addAcrossLostState(rt, sx)
		if a.DeviceIndex == 0 {
			t.Fatalf("the pod landed on the primary ENI (%s): the case needs it alone on a secondary", a.IP)
		}
		for _, q := range first {
			if err := rt.del(q, nil); err != nil {
				t.Fatal(err)
			}
		}
		w.passesPastReleaseDelay(3 * time.Second)
		w.assertNotReleased(p, a)
	})
}

// stoppingRuntime is the runtime with a cache (lost_test.go) whose ADDs
// stop at the points (ptrace_test.go).
func (w *world) stoppingRuntime(at ...point) (*runtime, *stopExec) {
	rt := w.runtimeWithCache(nil)
	sx := newStopExec(at...)
	rt.cni = libcni.NewCNIConfigWithCacheDir([]string{binDir}, rt.cacheDir, sx)
	return rt, sx
}

// addAcrossLostState ADDs a new pod, holds it at sx's point, checks its
// take is in the store, loses state.db and has `vpcctl state rebuild`
// make a new one, then lets the ADD go on. The ADD must succeed; it
// returns the pod and its assignment as the store now holds it.
func (w *world) addAcrossLostState(rt *runtime, sx *stopExec) (*pod, store.Assignment) {
	w.tb.Helper()
	p := w.newPod("held")
	key := store.AssignmentKey(p.id, p.ifname)
	type added struct {
		res *current.Result
		err error
	}
	done := make(chan added, 1)
	sx.arm()
	go func() { res, err := rt.add(p, nil); done <- added{res, err} }()
	select {
	case <-sx.held:
	case r := <-done:
		w.tb.Fatalf("the ADD ended before its hold point: %v", r.err)
	}
	taken, ok := w.assignmentsByKey()[key]
	if !ok {
		sx.goOn <- false
		w.tb.Fatalf("held at the point, the store does not hold %s's take yet", key)
	}
	w.loseState()
	if r := w.vpcctl(nil, "state", "rebuild", "--timeout", "1m", "--cni-cache-dir", rt.cacheDir); r.err != nil {
		sx.goOn <- false
		w.tb.Fatalf("state rebuild: %v\n%s%s", r.err, r.stdout, r.stderr)
	}
	if _, ok := w.assignmentsByKey()[key]; ok {
		w.tb.Fatalf("the rebuild restored %s before its wiring: the hold was not between take and wiring", key)
	}
	sx.goOn <- true
	r := <-done
	if r.err != nil {
		w.tb.Fatalf("ADD across the lost state: %v", r.err)
	}
	got := netip.MustParsePrefix(r.res.IPs[0].Address.String()).Addr()
	if got != taken.IP {
		w.tb.Fatalf("the ADD took %s and returned %s", taken.IP, got)
	}
	// The checks after the passes say what a missing record costs.
	if a, ok := w.assignmentsByKey()[key]; !ok || a.IP != got {
		w.tb.Errorf("the ADD returned %s; the rebuilt store holds %+v (%v) for the pod", got, a, ok)
	}
	return p, taken
}

// passesPastReleaseDelay runs passes, one after another, until a pass has
// started more than d after the first: past the cooldown and release
// delay, so every excess address or ENI is released by then.
func (w *world) passesPastReleaseDelay(d time.Duration) {
	w.tb.Helper()
	for start := time.Now(); ; {
		w.reconcile()
		if time.Since(start) > d {
			w.reconcile()
			return
		}
	}
}

// assertNotReleased: EC2 never took the pod's address or its ENI away, the
// store still holds the pod on it, and the store is sound.
func (w *world) assertNotReleased(p *pod, a store.Assignment) {
	w.tb.Helper()
	for _, r := range w.sim.Releases() {
		if r.ENIID == a.ENIID && (r.Action == "DetachNetworkInterface" || r.Action == "DeleteNetworkInterface") {
			w.tb.Errorf("%s %s, the ENI of running pod %s (%s)", r.Action, r.ENIID, p.id, a.IP)
		}
		for _, x := range r.Addrs {
			if x.Contains(a.IP) {
				w.tb.Errorf("%s %s on %s: running pod %s's address", r.Action, x, r.ENIID, p.id)
			}
		}
	}
	got, ok := w.assignmentsByKey()[store.AssignmentKey(p.id, p.ifname)]
	if !ok || got.IP != a.IP {
		w.tb.Errorf("the store holds %+v (%v) for running pod %s, want %s", got, ok, p.id, a.IP)
	}
	w.assertEachLiveAddressOnce()
	w.checkStore()
}

// An ADD killed at any point after its take, across a state loss, is a
// failed ADD whose DEL leaves nothing: no wiring, no assignment, a sound
// store and every live address held once. The points: before the wiring,
// after it (the look at state.db), in the record (the reconcile lock), and
// with the pod recorded but no result printed.
func TestPrivilegedAddKilledAcrossALostStateLeavesNothing(t *testing.T) {
	for _, tc := range []struct {
		name     string
		at       point
		recorded bool // the rebuilt store holds the pod at the point
	}{
		{"before the wiring", atSetns(), false},
		{"wired, before the look at state.db", statOf(store.DBFile), false},
		{"at the reconcile lock of the record", statOf(store.ReconcileLockFile), false},
		{"recorded, before the result", writeToStdout(), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, worldOpts{instanceType: "t3.small", env: []string{"WARM_IP_TARGET=3", "IP_COOLDOWN_PERIOD=0"}})
			rt, sx := w.stoppingRuntime(atSetns(), tc.at)
			running := rt.startPods("run", 1)
			p := w.newPod("killed")
			done := make(chan error, 1)
			sx.arm()
			go func() { _, err := rt.add(p, nil); done <- err }()
			w.holdOrFail(sx, done)
			w.loseState()
			if r := w.vpcctl(nil, "state", "rebuild", "--timeout", "1m", "--cni-cache-dir", rt.cacheDir); r.err != nil {
				sx.goOn <- false
				t.Fatalf("state rebuild: %v\n%s%s", r.err, r.stdout, r.stderr)
			}
			sx.goOn <- tc.name != "before the wiring"
			if tc.name != "before the wiring" {
				w.holdOrFail(sx, done)
				if _, ok := w.assignmentsByKey()[store.AssignmentKey(p.id, p.ifname)]; ok != tc.recorded {
					sx.goOn <- false
					t.Fatalf("at the point the store holds the pod: %v, want %v", ok, tc.recorded)
				}
				sx.goOn <- false
			}
			if err := <-done; err == nil {
				t.Fatal("the killed ADD succeeded")
			}
			if err := rt.del(p, nil); err != nil {
				t.Fatalf("the runtime's DEL after the failed ADD: %v", err)
			}
			held := w.assignmentsByKey()
			if a, ok := held[store.AssignmentKey(p.id, p.ifname)]; ok {
				t.Errorf("the store still holds the killed ADD's pod: %+v", a)
			}
			w.assertRunning(running, held)
			w.assertEachLiveAddressOnce()
			w.checkStore()
		})
	}
}

// holdOrFail waits until the armed ADD is held at its next point; an ADD
// that ends first fails the test.
func (w *world) holdOrFail(sx *stopExec, done chan error) {
	w.tb.Helper()
	select {
	case <-sx.held:
	case err := <-done:
		w.tb.Fatalf("the ADD ended before its hold point: %v", err)
	}
}
