package doctor

import (
	"strings"
	"testing"
	"time"

	"vpc-cni/internal/printers"
	"vpc-cni/pool"
	"vpc-cni/rebuild"
	"vpc-cni/settings"
	"vpc-cni/status"
	"vpc-cni/store"
)

// A state dir no pass has written says so, and that is a failure.
func TestRunOnAFreshStateSaysNoReconcileHasRun(t *testing.T) {
	st, err := store.OpenNew(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep := Run(st, settings.Inputs{Env: func(string) (string, bool) { return "", false }}, time.Now())
	f := rep.Failed()
	if len(rep) != 1 || f == nil || f.Check != "node" || !strings.Contains(f.Detail, "no reconcile has run") {
		t.Fatalf("report %+v", rep)
	}
}

// A failed pass names its cause and what to do; a stale one points at the timer.
func TestCheckLastReconcile(t *testing.T) {
	now := time.Now()
	pass := func(age time.Duration, err, cause string) status.PoolStatus {
		return status.PoolStatus{LastReconcile: &status.LastPass{Time: now.Add(-age), Duration: printers.Duration(time.Second),
			Error: err, Cause: cause}}
	}
	cases := []struct {
		name string
		s    status.PoolStatus
		ok   bool
		want string
	}{
		{"none", status.PoolStatus{}, false, "none recorded"},
		{"throttled", pass(time.Minute, "RequestLimitExceeded", "throttled"), false, settings.EC2DescribeRate},
		{"unknown cause", pass(time.Minute, "boom", "other"), false, "vpcctl events"},
		{"stale", pass(time.Hour, "", ""), false, "vpc-cni-reconcile.timer"},
		{"recent", pass(time.Minute, "", ""), true, "took 1s"},
	}
	for _, c := range cases {
		f := checkLastReconcile(c.s, now)
		if f.OK != c.ok || !strings.Contains(f.Detail, c.want) {
			t.Errorf("%s: %+v, want ok=%v and %q", c.name, f, c.ok, c.want)
		}
	}
}

// The report is the first failure's, and a clean report has none.
func TestReportFailedIsTheFirstFailure(t *testing.T) {
	r := Report{{"a", true, ""}, {"b", false, "x"}, {"c", false, "y"}}
	if f := r.Failed(); f == nil || f.Check != "b" {
		t.Fatalf("failed %+v", f)
	}
	if f := (Report{{"a", true, ""}}).Failed(); f != nil {
		t.Fatalf("failed %+v", f)
	}
}

// The last rebuild's event is named, with its time, once the node is
// healthy again; a node never rebuilt has no such line.
func TestLastRebuildNamesTheLastRebuild(t *testing.T) {
	st, err := store.OpenNew(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := lastRebuild(st); ok {
		t.Fatal("a state file never rebuilt has a rebuild line")
	}
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	err = st.Update(func(tx *store.Tx) error {
		for i, msg := range []string{"the first", "the second"} {
			if err := tx.AddEvent(store.Event{Time: at.Add(time.Duration(i) * time.Hour), Kind: rebuild.EventRebuilt, Message: msg}); err != nil {
				return err
			}
		}
		return tx.AddEvent(store.Event{Time: at.Add(2 * time.Hour), Kind: "assign", Message: "not a rebuild"})
	})
	if err != nil {
		t.Fatal(err)
	}
	f, ok := lastRebuild(st)
	if !ok || !f.OK || f.Detail != "the second, at 2026-12-01T11:00:00Z" {
		t.Fatalf("finding %+v", f)
	}
}

// The ENIs left alone are named with why and what they cost; none is not a failure either way.
func TestCheckNotOursNamesEachWithItsCost(t *testing.T) {
	if f := checkNotOurs(status.PoolStatus{}); !f.OK || !strings.Contains(f.Detail, "none") {
		t.Errorf("no ENI left alone: %+v", f)
	}
	s := status.PoolStatus{NotOurs: []status.NotOursStatus{
		{ID: "eni-trunk", Reason: "trunk", ENISlots: 1, MaxPods: 29},
		{ID: "eni-card1", Card: 1, Reason: "card 1"},
	}}
	f := checkNotOurs(s)
	for _, want := range []string{"2,", "eni-trunk (trunk; costs 1 ENI slot, 29 max pods)", "eni-card1 (card 1; on card 1: costs card 0 nothing)"} {
		if !f.OK || !strings.Contains(f.Detail, want) {
			t.Errorf("detail %q lacks %q", f.Detail, want)
		}
	}
}

// No free address with a shortfall is a fault when a pass would grow (pods
// wait) and nothing is full; a node that holds all it may is load, not a
// fault, whether or not freed addresses cool.
func TestCheckGrowthTellsAFullNodeFromStuck(t *testing.T) {
	figures := pool.Figures{Free: 0, Cooling: 5, Assigned: 23, Shortfall: 8, ENIs: 2, MaxENIs: 2, MaxPods: 28}
	full := &pool.Fullness{Full: true, Limit: pool.LimitENIs, Reason: "the node is full", Frees: "when pods go"}
	if f := checkGrowth(status.PoolStatus{Figures: figures, Full: full, Pending: []pool.Action{}}); !f.OK || !strings.Contains(f.Detail, "at the node's limits (2 of 2 ENIs, 28 max pods)") {
		t.Errorf("at the limits: %+v", f)
	}
	grow := status.PoolStatus{Figures: figures, Full: &pool.Fullness{}, Pending: []pool.Action{{Kind: pool.Assign, Count: 8}}}
	if f := checkGrowth(grow); f.OK || !strings.Contains(f.Detail, "shortfall of 8") {
		t.Errorf("a grow is due: %+v", f)
	}
	backedOff := &pool.Fullness{Full: true, Limit: pool.LimitSubnet}
	if f := checkGrowth(status.PoolStatus{Figures: figures, Full: backedOff, Pending: []pool.Action{}}); f.OK {
		t.Errorf("the subnet has no address for a pod that waits: %+v", f)
	}
}

func TestCheckFullIsAWarningNotAFault(t *testing.T) {
	if f := checkFull(status.PoolStatus{Full: &pool.Fullness{}}); !f.OK || f.Detail != "no: an address is free or can be had" {
		t.Errorf("not full: %+v", f)
	}
	full := &pool.Fullness{Full: true, Limit: pool.LimitMaxPods, Reason: "the node is full: it holds 11 addresses", Frees: "a pod's address is free again"}
	f := checkFull(status.PoolStatus{Full: full})
	if !f.OK || f.Detail != "yes (max-pods): the node is full: it holds 11 addresses; a pod's address is free again; the node stays ready, its ADDs fail with code 11 until then" {
		t.Errorf("full: %+v", f)
	}
}
