package reconcile

import (
	"testing"
	"time"

	"vpc-cni/store"
)

// A pass killed before its CreateNetworkInterface left a create intent: the
// next pass finds out from one Describe that the create never happened and
// settles the intent with no mutating call (a replay made the ENI only to
// delete it: two).
func TestCreateThatNeverReachedEC2CostsNoMutatingCall(t *testing.T) {
	n := newNode(t, "t3.small", env{})
	needENI(n)
	killedAt(t, n, cpPlanned)
	wantIntents(t, n, 1)
	n.env["WARM_ENI_TARGET"] = "0" // the pool now needs no ENI: every mutating call would be the repair's
	n.sim.ResetCounters()
	rep := n.pass()
	t.Logf("calls %v failed %v", rep.Calls, rep.Failed)
	if c := n.sim.Counters(); mutating(c) != 0 {
		t.Errorf("repairing a create that never happened made mutating calls: %v", c)
	}
	wantIntents(t, n, 0)
	checkAgrees(t, n.sim, n.st)
}

// Killed after the create, before the attach: the repair finds the loose ENI
// by its intent tag and deletes it, creating nothing.
func TestCreateThatReachedEC2IsFoundByItsTag(t *testing.T) {
	n := newNode(t, "t3.small", env{})
	needENI(n)
	killedAt(t, n, cpCreated)
	wantDetachedENI(t, n)
	n.env["WARM_ENI_TARGET"] = "0"
	n.sim.ResetCounters()
	n.pass()
	c := n.sim.Counters()
	if c["CreateNetworkInterface"] != 0 || c["DeleteNetworkInterface"] != 1 {
		t.Errorf("repair calls %v: want the loose ENI deleted and nothing created", c)
	}
	for _, e := range n.sim.State().ENIs {
		if e.DeviceIndex < 0 {
			t.Errorf("ENI %s still loose after the repair", e.ID)
		}
	}
	wantIntents(t, n, 0)
}

// While CreateNetworkInterface is denied, the intent a killed create left
// costs no create attempt at all; and an intent that cannot be settled (its
// loose ENI cannot be deleted) is backed off, not retried on every pass, and
// settles once the denial is lifted.
func TestUnsettledCreateIntentIsBackedOff(t *testing.T) {
	n := newNode(t, "t3.small", env{})
	needENI(n)
	killedAt(t, n, cpCreated)
	n.env["WARM_ENI_TARGET"] = "0"
	n.sim.DenyAction("CreateNetworkInterface")
	n.sim.DenyAction("DeleteNetworkInterface")
	n.sim.ResetCounters()
	const passes = 30
	for range passes {
		n.clock.Advance(10 * time.Second)
		n.pass()
	}
	c := n.sim.Counters()
	t.Logf("%d passes over %v: %v", passes, passes*10*time.Second, c)
	if c["CreateNetworkInterface"] != 0 {
		t.Errorf("%d create attempts in %d passes, want none", c["CreateNetworkInterface"], passes)
	}
	if c["DeleteNetworkInterface"] > passes/5 {
		t.Errorf("%d delete attempts in %d passes: the unsettled intent was not backed off", c["DeleteNetworkInterface"], passes)
	}
	if in := wantIntents(t, n, 1); in[0].Tries == 0 || !in[0].NextTry.After(n.clock.Now()) {
		t.Errorf("intent %+v: want its failed tries and a next try in the future", in[0])
	}
	n.sim.AllowAction("DeleteNetworkInterface")
	n.clock.Advance(maxIntentBackoff)
	n.pass()
	wantIntents(t, n, 0)
	checkAgrees(t, n.sim, n.st)
}

func wantIntents(t *testing.T, n *node, want int) []store.Intent {
	t.Helper()
	var intents []store.Intent
	if err := n.st.View(func(tx *store.Tx) (err error) { intents, err = tx.Intents(); return err }); err != nil {
		t.Fatal(err)
	}
	if len(intents) != want {
		t.Fatalf("%d intents in the store, want %d: %+v", len(intents), want, intents)
	}
	return intents
}

// A repair that was throttled is not backed off: throttling passes by
// itself, and the next pass settles the intent.
func TestThrottledRepairIsRetriedNextPass(t *testing.T) {
	n := newNode(t, "t3.small", env{})
	needENI(n)
	killedAt(t, n, cpCreated)
	n.env["WARM_ENI_TARGET"] = "0"
	n.sim.FailNext("DeleteNetworkInterface", "RequestLimitExceeded", 1000)
	if rep, _ := n.r.Run(ctxFor(t), Options{}); len(rep.Failed) == 0 {
		t.Fatalf("the repair pass did not fail while throttled: calls %v", rep.Calls)
	}
	if in := wantIntents(t, n, 1); in[0].Tries != 0 || !in[0].NextTry.IsZero() {
		t.Errorf("a throttled repair was backed off: %+v", in[0])
	}
	n.sim.FailNext("DeleteNetworkInterface", "", 0)
	n.clock.Advance(time.Second)
	n.pass()
	wantIntents(t, n, 0)
	checkAgrees(t, n.sim, n.st)
}
