package reconcile

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"vpc-cni/settings"
	"vpc-cni/store"
)

// A pass over a pool at its targets reads IMDS, makes no EC2 call, and
// changes nothing; with VPC_CNI_EC2_RESYNC_INTERVAL=0 it reads EC2 once.
func TestSteadyStateCostsEC2Nothing(t *testing.T) {
	n := newNode(t, "t3.small", env{"WARM_IP_TARGET": "2", "MINIMUM_IP_TARGET": "5"})
	n.converge(5) // the first pass learns the node and may sweep leaked ENIs
	for i := 0; i < 3; i++ {
		n.sim.ResetCounters()
		rep := n.pass()
		if got := n.sim.Counters(); ec2Calls(got) != 0 || got["IMDS"] == 0 || rep.Observed != FromIMDS {
			t.Fatalf("steady pass %d made %v, observed %q; want IMDS reads and no EC2 call", i, got, rep.Observed)
		}
		if len(rep.Calls) != 0 || !rep.Plan.Empty() {
			t.Fatalf("report: calls %v, plan %+v", rep.Calls, rep.Plan.Actions)
		}
		n.clock.Advance(time.Minute)
	}
	n.env[settings.EC2ResyncInterval] = "0"
	n.sim.ResetCounters()
	if rep := n.pass(); !reflect.DeepEqual(ec2Only(n.sim.Counters()), map[string]int{"DescribeNetworkInterfaces": 1}) ||
		len(rep.Calls) != 1 || !rep.Plan.Empty() {
		t.Fatalf("with %s=0 a steady pass made %v (plan %+v); want exactly one DescribeNetworkInterfaces",
			settings.EC2ResyncInterval, n.sim.Counters(), rep.Plan.Actions)
	}
}

// --dry-run plans without a mutating call and leaves the store as it was.
func TestDryRunChangesNothing(t *testing.T) {
	n := newNode(t, "t3.small", env{"WARM_ENI_TARGET": "1"})
	for _, stage := range []string{"fresh node", "after a pod"} {
		before := dump(t, n.st)
		n.sim.ResetCounters()
		rep, err := n.r.Run(ctxFor(t), Options{DryRun: true})
		if err != nil {
			t.Fatalf("%s: dry run: %v", stage, err)
		}
		if m := mutating(n.sim.Counters()); m != 0 {
			t.Errorf("%s: dry run made %d mutating calls: %v", stage, m, n.sim.Counters())
		}
		if rep.Plan.Empty() || len(rep.Calls) < 2 {
			t.Errorf("%s: dry run shows no work: plan %+v calls %v", stage, rep.Plan.Actions, rep.Calls)
		}
		if after := dump(t, n.st); after != before {
			t.Errorf("%s: dry run changed the store:\nbefore %s\nafter  %s", stage, before, after)
		}
		n.converge(5)
		if _, err := n.addPod(); err != nil {
			t.Fatal(err)
		}
	}
}

// dump is every observable piece of the store, for before/after comparisons.
func dump(t testing.TB, st *store.Store) string {
	t.Helper()
	var b strings.Builder
	err := st.View(func(tx *store.Tx) error {
		node, _, err := tx.Node()
		if err != nil {
			return err
		}
		snap, err := tx.Snapshot()
		if err != nil {
			return err
		}
		s, _ := tx.Settings()
		in, _ := tx.Intents()
		as, _ := tx.Assignments()
		ev, _ := tx.Events(1000)
		co, _ := tx.Counters()
		rr, _, _ := tx.ReconcileReport()
		pm, _ := tx.PoolMeta()
		for _, v := range []any{node, snap, s, in, as, ev, co, rr, pm} {
			b.WriteString(fmtV(v) + "\n")
		}
		return nil
	})
	if err != nil && !strings.Contains(err.Error(), "not initialized") {
		t.Fatalf("dump: %v", err)
	}
	return b.String()
}
