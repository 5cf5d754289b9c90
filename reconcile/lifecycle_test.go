package reconcile

import (
	"slices"
	"strings"
	"testing"
	"time"

	"vpc-cni/cloud"
	"vpc-cni/sim/ec2sim"
	"vpc-cni/store"
)

// TestExcessIsReleasedOnlyAfterTheDelayAndEmptyENIsAreDeleted: lowering the
// target leaves the pool alone until the excess has lasted RELEASE_DELAY;
// then the highest ENI, drained, is deleted in EC2 (not just detached) and
// the rest goes back in one Unassign.
func TestExcessIsReleasedOnlyAfterTheDelayAndEmptyENIsAreDeleted(t *testing.T) {
	n := newNode(t, "t3.small", env{"WARM_IP_TARGET": "5", "RELEASE_DELAY": "2m"})
	n.converge(5)
	if enis, addrs := simHeld(n.sim); enis != 2 || addrs != 5 {
		t.Fatalf("at WARM_IP_TARGET=5: %d ENIs, %d addresses; want 2 and 5", enis, addrs)
	}
	n.env["WARM_IP_TARGET"] = "1"
	for _, wait := range []time.Duration{0, time.Minute, 59 * time.Second} {
		n.clock.Advance(wait)
		n.sim.ResetCounters()
		rep := n.pass()
		if m := mutating(n.sim.Counters()); m != 0 || len(rep.Plan.Actions) != 0 {
			t.Fatalf("after %v of excess: %d mutating calls, plan %+v; want none before the delay", wait, m, rep.Plan.Actions)
		}
	}
	n.clock.Advance(2 * time.Second) // the excess has now lasted 2m1s
	n.pass()
	enis, addrs := simHeld(n.sim)
	if enis != 1 || addrs != 1 || len(n.sim.State().ENIs) != 1 {
		t.Fatalf("after the delay: %d attached ENIs, %d addresses, %d ENIs in EC2; want 1, 1, 1 (the second deleted)",
			enis, addrs, len(n.sim.State().ENIs))
	}
	checkAgrees(t, n.sim, n.st)
	n.sim.ResetCounters()
	if rep := n.pass(); !rep.Plan.Empty() || mutating(n.sim.Counters()) != 0 {
		t.Fatalf("the pass after the release planned %+v; want nothing (no grow/free loop)", rep.Plan.Actions)
	}
}

// TestLeakedENIsAreSweptEverySixHours: ENIs tagged as ours, unattached and
// older than five minutes are deleted on the first pass and then at most
// every LeakSweepEvery; a young one is left, and the sweep stays due until
// it is old enough.
func TestLeakedENIsAreSweptEverySixHours(t *testing.T) {
	n := newNode(t, "t3.small", nil)
	n.pass() // learns the node (VPC, subnet); the first sweep finds nothing
	n.clock.Advance(LeakSweepEvery + time.Second)
	old := n.leak(t, time.Hour)
	young := n.leak(t, time.Minute)
	others := n.othersLeak(t)
	n.pass()
	if n.exists(old) || !n.exists(young) {
		t.Fatalf("after the sweep: old leaked ENI exists=%v, young exists=%v; want false, true", n.exists(old), n.exists(young))
	}
	var events []store.Event
	if err := n.st.View(func(tx *store.Tx) (err error) { events, err = tx.Events(0); return err }); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(events, func(e store.Event) bool { return e.Kind == "leaked-eni" && strings.Contains(e.Message, old) }) {
		t.Errorf("no leaked-eni event names the deleted %s: %+v", old, events)
	}
	wantKept(t, n, others)
	n.clock.Advance(leakAge)
	if n.pass(); n.exists(young) {
		t.Fatal("the sweep, due while a young ENI waited, left it once it was old enough")
	}
	later := n.leak(t, time.Hour)
	n.clock.Advance(10 * time.Minute)
	if _, err := n.r.Run(ctxFor(t), Options{GrowOnly: true}); err != nil { // an inline grow in between
		t.Fatal(err)
	}
	n.pass()
	if !n.exists(later) {
		t.Fatal("a second sweep ran within LeakSweepEvery")
	}
	n.clock.Advance(LeakSweepEvery)
	n.pass()
	if n.exists(later) {
		t.Fatal("the next sweep left leaked ENIs that are old enough")
	}
	wantKept(t, n, others)
	for _, id := range others {
		if err := n.r.Cloud.DeleteENI(ctxFor(t), id); err != nil { // the test's own clean-up
			t.Fatal(err)
		}
	}
	checkAgrees(t, n.sim, n.st)
}

func wantKept(t *testing.T, n *node, ids []string) {
	t.Helper()
	for _, id := range ids {
		if !n.exists(id) {
			t.Fatalf("the sweep deleted %s, which this node did not create", id)
		}
	}
}

// A state file's first sweep (a new node, or the state dir wiped) leaves
// this node's young unattached ENIs too: a pass that began under the wiped
// directory's lock may be creating or attaching one. They go once they are
// old enough, without waiting LeakSweepEvery.
func TestANewStateFileLeavesYoungENIsUntilTheyAreOldEnough(t *testing.T) {
	n := newNode(t, "t3.small", nil)
	n.pass()
	n.clock.Advance(time.Minute)
	young := n.leak(t, 10*time.Second) // a create of a pass whose state dir then went
	others := n.othersLeak(t)
	if n.pass(); !n.exists(young) {
		t.Fatal("a pass of the same state file deleted a 10-second-old ENI")
	}
	wiped := attachNode(t, n.sim, t.TempDir(), nil)
	wiped.r.Now = n.clock.Now
	if wiped.pass(); !wiped.exists(young) {
		t.Fatalf("the first pass of a new state file deleted the 10-second-old ENI %s", young)
	}
	n.clock.Advance(leakAge)
	if wiped.pass(); wiped.exists(young) {
		t.Fatalf("the new state file's sweep left %s once it was old enough", young)
	}
	wantKept(t, wiped, others)
}

// leak creates an ENI of this node's kind that was never attached, created
// age ago by the test clock.
func (n *node) leak(t *testing.T, age time.Duration) string {
	t.Helper()
	cl := n.r.Cloud.(*cloud.Client)
	node := n.nodeRecord()
	eni, err := cl.CreateENI(ctxFor(t), cloud.CreateENIRequest{SubnetID: node.SubnetID, InstanceID: node.InstanceID,
		Count: 1, ClientToken: newToken(), Now: n.clock.Now().Add(-age)})
	if err != nil {
		t.Fatalf("creating a leaked ENI: %v", err)
	}
	return eni.ID
}

// othersLeak makes detached, old ENIs the sweep must leave: another node's,
// and one with this node's instance tag but a user's description.
func (n *node) othersLeak(t *testing.T) []string {
	t.Helper()
	cl := n.r.Cloud.(*cloud.Client)
	node := n.nodeRecord()
	eni, err := cl.CreateENI(ctxFor(t), cloud.CreateENIRequest{SubnetID: node.SubnetID, InstanceID: "i-0deadbeef0000000",
		Count: 1, ClientToken: newToken(), Now: n.clock.Now().Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	user, err := n.sim.AddENI(ec2sim.ENISpec{Description: "storage network", Detached: true, Tags: map[string]string{
		cloud.TagInstanceID: node.InstanceID, cloud.TagCreatedAt: n.clock.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}})
	if err != nil {
		t.Fatal(err)
	}
	return []string{eni.ID, user.ID}
}

func (n *node) exists(id string) bool {
	for _, e := range n.sim.State().ENIs {
		if e.ID == id {
			return true
		}
	}
	return false
}

func (n *node) nodeRecord() store.Node {
	n.t.Helper()
	var node store.Node
	if err := n.st.View(func(tx *store.Tx) (err error) { node, _, err = tx.Node(); return err }); err != nil {
		n.t.Fatalf("node: %v", err)
	}
	return node
}

// TestPrefixDelegationOnXenUsesSingleAddresses: a Xen instance cannot hold
// /28 prefixes, so the setting is ignored with a finding, as the reference
// does, instead of failing every growth call.
func TestPrefixDelegationOnXenUsesSingleAddresses(t *testing.T) {
	n := newNode(t, "t2.medium", env{"ENABLE_PREFIX_DELEGATION": "true", "WARM_IP_TARGET": "2"})
	rep := n.pass()
	found := false
	for _, f := range rep.Findings {
		found = found || f.Kind == "no-prefix-delegation"
	}
	if !found {
		t.Fatalf("findings %+v: want no-prefix-delegation", rep.Findings)
	}
	n.converge(3)
	for _, e := range n.sim.State().ENIs {
		if len(e.Prefixes) > 0 {
			t.Fatalf("ENI %s holds prefixes %v on a Xen instance", e.ID, e.Prefixes)
		}
	}
	if _, addrs := simHeld(n.sim); addrs != 2 {
		t.Fatalf("%d addresses, want 2 single ones", addrs)
	}
}

// DISABLE_LEAKED_ENI_CLEANUP=true: a leak old enough to be swept stays.
func TestLeakSweepOffKeepsLeakedENIs(t *testing.T) {
	n := newNode(t, "t3.small", env{"DISABLE_LEAKED_ENI_CLEANUP": "true"})
	n.pass()
	n.clock.Advance(LeakSweepEvery + time.Second)
	old := n.leak(t, time.Hour)
	n.pass()
	n.clock.Advance(LeakSweepEvery + time.Second)
	n.pass()
	if !n.exists(old) {
		t.Fatalf("DISABLE_LEAKED_ENI_CLEANUP=true, yet the sweep deleted %s", old)
	}
}
