package e2e

import (
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"vpc-cni/store"
)

// State removed while a pass runs, with ADDs arriving meanwhile, never puts
// one address on two live pods. Three pods run; a reconcile pass starts (at
// rest, or growing because its environment asks for more), state.db goes
// at a random moment of it, and two new pods' ADDs run at the same time.
// Whatever each process then does (fail, rebuild, grow), after a settling
// pass every running pod keeps its address and wiring, every live pod's
// address is its own, and the store agrees with the kernel.
func TestPrivilegedStateRemovedDuringAPassNeverGivesAnAddressTwice(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string // the pass's own environment
	}{
		{"at rest", nil},
		{"growing", []string{"WARM_IP_TARGET=8"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, worldOpts{instanceType: "t3.small", env: []string{"WARM_IP_TARGET=3", "IP_COOLDOWN_PERIOD=0"}})
			rt := w.runtimeWithCache(nil)
			running := rt.startPods("run", 3)
			before := w.assignmentsByKey()
			arriving := w.newPods("new", 2)
			var wg sync.WaitGroup
			var pass run
			wg.Go(func() {
				pass = w.vpcctl(tc.env, "reconcile", "--wait", "--timeout", "1m", "--cni-cache-dir", rt.cacheDir)
			})
			wg.Go(func() {
				time.Sleep(time.Duration(rand.IntN(40)) * time.Millisecond) // the fault's moment, not a wait for anything
				if err := os.Remove(filepath.Join(w.stateDir, store.DBFile)); err != nil && !os.IsNotExist(err) {
					t.Error(err)
				}
			})
			for _, p := range arriving {
				wg.Go(func() { _, _ = rt.add(p, nil) }) // may fail (code 11) while the state is rebuilt
			}
			wg.Wait()
			t.Logf("the pass: %v\n%s", pass.err, pass.stderr)
			r := w.vpcctl(nil, "reconcile", "--wait", "--timeout", "1m", "--cni-cache-dir", rt.cacheDir)
			if r.err != nil {
				t.Fatalf("the settling pass: %v\n%s%s", r.err, r.stdout, r.stderr)
			}
			after := w.assignmentsByKey()
			w.assertRestored(running, before, after)
			w.assertRunning(running, after)
			w.assertEachLiveAddressOnce()
			w.checkStore()
		})
	}
}

// assertEachLiveAddressOnce: the kernel routes every pod address to one
// live veth, and the store holds each for exactly the pod on that veth.
func (w *world) assertEachLiveAddressOnce() {
	w.tb.Helper()
	hs := w.hostState()
	routed := map[netip.Addr]string{}
	for _, r := range hs.LivePods() {
		if other, ok := routed[r.IP]; ok && other != r.Veth {
			w.tb.Fatalf("%s is routed to %s and %s", r.IP, other, r.Veth)
		}
		routed[r.IP] = r.Veth
	}
	held := map[netip.Addr]string{}
	for _, a := range w.assignments() {
		for _, ip := range []netip.Addr{a.IP, a.IPv6} {
			if !ip.IsValid() {
				continue
			}
			if other, ok := held[ip]; ok {
				w.tb.Fatalf("%s is held by %s and %s", ip, other, a.Key)
			}
			held[ip] = a.Key
			if veth, ok := routed[ip]; ok && veth != a.HostVeth {
				w.tb.Fatalf("%s is held by %s (veth %s) but routed to %s", ip, a.Key, a.HostVeth, veth)
			}
		}
	}
	for ip, veth := range routed {
		if _, ok := held[ip]; !ok {
			w.tb.Fatalf("%s is routed to the live veth %s but the store does not hold it", ip, veth)
		}
	}
}

// The DaemonSet's init container runs `vpcctl install` on a node whose state
// is gone while pods run (a node rebooted onto a fresh state dir, a wiped
// host path): install's first pass rebuilds the state before it plans, so
// the next pod gets none of the running pods' addresses.
func TestPrivilegedInstallOnALostStateRebuildsIt(t *testing.T) {
	w := newWorld(t, worldOpts{instanceType: "t3.small", env: []string{"WARM_IP_TARGET=3", "IP_COOLDOWN_PERIOD=0"}})
	rt := w.runtimeWithCache(nil)
	running := rt.startPods("run", 3)
	before := w.assignmentsByKey()
	w.loseState()
	// install's paths are under --root; its state dir is the world's.
	root, dir := filepath.Dir(w.stateDir), "/"+filepath.Base(w.stateDir)
	r := w.execInNode(bin("vpcctl"), nil, nil, "--state-dir", dir, "install", "--root", root, "--timer", "none",
		"--cni-cache-dir", rt.cacheDir)
	if r.err != nil {
		t.Fatalf("install on the lost state: %v\n%s%s", r.err, r.stdout, r.stderr)
	}
	after := w.assignmentsByKey()
	w.assertRestored(running, before, after)
	fresh := w.newPod("new")
	res, err := rt.add(fresh, nil)
	if err != nil {
		t.Fatalf("ADD after install: %v", err)
	}
	wantNoneOf(t, netip.MustParsePrefix(res.IPs[0].Address.String()).Addr(), before)
	w.assertEachLiveAddressOnce()
}

// IMDS-only mode makes no EC2 call, lost state included: the ADD that finds
// the state gone rebuilds it from IMDS and the kernel, and gets none of the
// running pods' addresses.
func TestPrivilegedIMDSOnlyLostStateIsRebuiltWithoutEC2(t *testing.T) {
	w := newWorld(t, worldOpts{instanceType: "t3.small", env: []string{"WARM_IP_TARGET=6", "IP_COOLDOWN_PERIOD=0"}})
	w.reconcile() // the addresses IMDS-only mode will use, assigned while EC2 was allowed
	rt := w.runtimeWithCache(nil)
	running := rt.startPods("run", 2)
	before := w.assignmentsByKey()
	w.writeConfig([]string{"WARM_IP_TARGET=6", "IP_COOLDOWN_PERIOD=0", "ENABLE_IMDS_ONLY_MODE=true"})
	w.loseState()
	w.sim.ResetCounters()
	res, err := rt.add(w.newPod("new"), nil)
	if err != nil {
		t.Fatalf("ADD on the lost state in IMDS-only mode: %v", err)
	}
	wantNoneOf(t, netip.MustParsePrefix(res.IPs[0].Address.String()).Addr(), before)
	for action, n := range w.sim.Counters() {
		if n > 0 && !strings.HasPrefix(action, "IMDS") {
			t.Errorf("%d %s calls in IMDS-only mode", n, action)
		}
	}
	w.assertRestored(running, before, w.assignmentsByKey())
	w.assertEachLiveAddressOnce()
}

// startPods ADDs n new pods through the runtime and fails the test if one
// fails.
func (rt *runtime) startPods(prefix string, n int) []*pod {
	rt.w.tb.Helper()
	pods := rt.w.newPods(prefix, n)
	for _, p := range pods {
		if _, err := rt.add(p, nil); err != nil {
			rt.w.tb.Fatalf("ADD %s: %v", p.id, err)
		}
	}
	return pods
}

// wantNoneOf fails when got is an address one of the running pods held.
func wantNoneOf(t *testing.T, got netip.Addr, running map[string]store.Assignment) {
	t.Helper()
	for _, a := range running {
		if a.IP == got {
			t.Fatalf("the new pod got %s, a running pod's address (%s)", got, a.Key)
		}
	}
}
