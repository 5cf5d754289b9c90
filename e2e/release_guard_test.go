package e2e

import (
	"encoding/json"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"vpc-cni/netns"
	"vpc-cni/pool"
	"vpc-cni/sim/ec2sim"
	"vpc-cni/store"
)

// A pass never gives back what the kernel routes to a running pod, whatever
// the store says: the store is made to say a running pod's address on a
// secondary ENI is free (as a state loss while its ADD wired it leaves it),
// and a pass that would release it leaves it, and its ENI, in place.
func TestPrivilegedPassNeverReleasesWhatTheKernelRoutesToARunningPod(t *testing.T) {
	t.Run("its address is left out of the unassign and held", func(t *testing.T) {
		w := newWorld(t, worldOpts{instanceType: "t3.small", env: []string{"WARM_IP_TARGET=4", "IP_COOLDOWN_PERIOD=0"}})
		conf := mustJSON(t, w.conf(nil))
		pods := w.newPods("run", 5) // three fill the primary ENI, two go to device 1
		for _, p := range pods {
			w.add(p, conf)
		}
		lost, ip, eni := w.podOnDevice(pods, 1)
		w.storeSaysFree(lost)
		w.writeConfig([]string{"MINIMUM_IP_TARGET=1", "RELEASE_DELAY=1s", "IP_COOLDOWN_PERIOD=0"})
		before := len(w.sim.Releases())

		dry := w.passReport("--dry-run")
		if dry.unassigns(ip) || !dry.found("release-held", ip) {
			t.Errorf("the dry run's plan releases %s or does not say it is held: %+v", ip, dry)
		}
		rep := w.passReport()
		if !rep.found("release-held", ip) {
			t.Errorf("the pass does not report %s held: %+v", ip, rep.Findings)
		}
		if rels := releasesOf(w.sim.Releases()[before:], ip); len(rels) > 0 {
			t.Fatalf("EC2 unassigned %s, routed to %s: %v", ip, lost.hostVeth(), rels)
		}
		if !w.simHolds(ip) {
			t.Fatalf("EC2 no longer lists %s on the node", ip)
		}
		w.assertHeldBy(lost, ip, eni)
	})
	t.Run("the ENI it is alone on is neither detached nor deleted", func(t *testing.T) {
		w := newWorld(t, worldOpts{instanceType: "t3.small", env: []string{"WARM_IP_TARGET=4", "IP_COOLDOWN_PERIOD=0"}})
		conf := mustJSON(t, w.conf(nil))
		pods := w.newPods("run", 4) // three fill the primary ENI, one goes to device 1
		for _, p := range pods {
			w.add(p, conf)
		}
		lost, ip, eni := w.podOnDevice(pods, 1)
		for _, p := range pods {
			if p != lost {
				w.del(p, conf)
			}
		}
		w.storeSaysFree(lost)
		w.writeConfig([]string{"RELEASE_DELAY=1s", "IP_COOLDOWN_PERIOD=0"}) // WARM_ENI_TARGET=1, the default
		w.sim.ResetCounters()

		rep := w.passReport()
		calls := w.sim.ENICalls(eni)
		if calls["DetachNetworkInterface"] > 0 || calls["DeleteNetworkInterface"] > 0 {
			t.Fatalf("%s, carrying %s routed to a running pod, was detached or deleted: %v", eni, ip, calls)
		}
		if !rep.found("release-held", ip) {
			t.Errorf("the pass does not report %s held: %+v", ip, rep.Findings)
		}
		w.assertHeldBy(lost, ip, eni)
	})
}

// podOnDevice is the first of pods whose address is on the ENI at device
// index dev, with that address and ENI.
func (w *world) podOnDevice(pods []*pod, dev int) (*pod, netip.Addr, string) {
	w.tb.Helper()
	held := w.assignmentsByKey()
	for _, p := range pods {
		if a, ok := held[store.AssignmentKey(p.id, p.ifname)]; ok && a.DeviceIndex == dev {
			return p, a.IP, a.ENIID
		}
	}
	w.tb.Fatalf("no pod on device %d: %v", dev, held)
	return nil, netip.Addr{}, ""
}

// storeSaysFree makes the store forget p's assignment while its wiring
// stays (what a state loss between an ADD's take and its wiring leaves),
// and makes the pool's excess old enough to be released by the next pass.
func (w *world) storeSaysFree(p *pod) {
	w.tb.Helper()
	st, err := store.Open(w.stateDir, store.Options{})
	if err != nil {
		w.tb.Fatal(err)
	}
	err = st.Update(func(tx *store.Tx) error {
		if _, ok, err := tx.Give(store.AssignmentKey(p.id, p.ifname), time.Now()); err != nil || !ok {
			return err
		}
		return tx.PutPoolTimers("", pool.Timers{ExcessSince: time.Now().Add(-time.Hour)})
	})
	if err != nil {
		w.tb.Fatal(err)
	}
}

// assertHeldBy fails unless the store holds ip for p (its sandbox, as its
// host veth's alias names it) on eni, and the kernel still routes it there.
func (w *world) assertHeldBy(p *pod, ip netip.Addr, eni string) {
	w.tb.Helper()
	a, ok := w.assignmentsByKey()[store.AssignmentKey(p.id, p.ifname)]
	if !ok || a.IP != ip || a.ENIID != eni || a.HostVeth != p.hostVeth() {
		w.tb.Errorf("after the pass the store holds %+v for %s, want %s on %s", a, p.id, ip, eni)
	}
	if st := w.addrState(ip); st != pool.Assigned {
		w.tb.Errorf("%s is %q in the store, want assigned", ip, st)
	}
	if !slices.Contains(w.hostState().LivePods(), netns.RouteInfo{IP: ip, Veth: p.hostVeth()}) {
		w.tb.Errorf("%s is no longer routed to %s", ip, p.hostVeth())
	}
	w.checkStore()
}

// passOut is what a test reads of `vpcctl reconcile -o json`.
type passOut struct {
	Plan struct {
		Actions []pool.Action `json:"actions"`
	} `json:"plan"`
	Findings []struct{ Kind, Message string } `json:"findings"`
	Failed   []string                         `json:"failed"`
}

func (w *world) passReport(args ...string) passOut {
	w.tb.Helper()
	r := w.vpcctl(nil, append([]string{"reconcile", "--wait", "--timeout", "1m", "-o", "json"}, args...)...)
	var out passOut
	if err := json.Unmarshal(r.stdout, &out); err != nil || r.err != nil {
		w.tb.Fatalf("vpcctl reconcile %v: %v (%v)\n%s%s", args, r.err, err, r.stdout, r.stderr)
	}
	return out
}

// unassigns reports whether the plan gives back a block holding ip.
func (o passOut) unassigns(ip netip.Addr) bool {
	for _, a := range o.Plan.Actions {
		if slices.ContainsFunc(a.Release, func(b netip.Prefix) bool { return b.Contains(ip) }) {
			return true
		}
	}
	return false
}

func (o passOut) found(kind string, ip netip.Addr) bool {
	return slices.ContainsFunc(o.Findings, func(f struct{ Kind, Message string }) bool {
		return f.Kind == kind && strings.HasPrefix(f.Message, ip.String()+" ")
	})
}

// releasesOf are the releases that took ip away.
func releasesOf(rels []ec2sim.Release, ip netip.Addr) []ec2sim.Release {
	var out []ec2sim.Release
	for _, r := range rels {
		if slices.ContainsFunc(r.Addrs, func(p netip.Prefix) bool { return p.Contains(ip) }) {
			out = append(out, r)
		}
	}
	return out
}
