package reconcile

import (
	"crypto/sha256"
	"encoding/json"
	"strings"
	"testing"
	"vpc-cni/internal/testsupport/simtest"

	"vpc-cni/cloud"
	"vpc-cni/settings"
	"vpc-cni/sim/ec2sim"
	"vpc-cni/store"
)

// assertFailureRecorded: the failed pass left its error and cause in the
// report, a reconcile-failed event naming the error, and a counter.
func assertFailureRecorded(t *testing.T, st *store.Store, cause string, passErr error) {
	t.Helper()
	var rep store.ReconcileReport
	var events []store.Event
	var counters map[string]int64
	err := st.View(func(tx *store.Tx) (err error) {
		if rep, _, err = tx.ReconcileReport(); err != nil {
			return err
		}
		if events, err = tx.Events(0); err != nil {
			return err
		}
		counters, err = tx.Counters()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Error != passErr.Error() || rep.Cause != cause {
		t.Errorf("report error %q cause %q, want %q cause %q", rep.Error, rep.Cause, passErr, cause)
	}
	if len(events) == 0 || events[len(events)-1].Kind != "reconcile-failed" ||
		!strings.Contains(events[len(events)-1].Message, passErr.Error()) {
		t.Errorf("no reconcile-failed event with the error; events: %+v", events)
	}
	if counters["reconcile_failed"] < 1 {
		t.Errorf("counters %v: no reconcile_failed", counters)
	}
}

// poolSum is everything a pass may change in the store but its own record
// (report, events, counters): node, settings, pool, assignments, intents.
func poolSum(t *testing.T, st *store.Store) [32]byte {
	t.Helper()
	var all []any
	err := st.View(func(tx *store.Tx) error {
		node, _, err := tx.Node()
		if err != nil {
			return err
		}
		snap, err := tx.Snapshot()
		if err != nil {
			return err
		}
		settings, err := tx.Settings()
		if err != nil {
			return err
		}
		as, err := tx.Assignments()
		if err != nil {
			return err
		}
		in, err := tx.Intents()
		all = []any{node, snap, settings, as, in}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(all)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// A pass that cannot reach or may not use EC2 or IMDS fails with a message
// that says which and what to do, changes nothing of the node's pool, and
// leaves a trace: the report's error and cause, an event, a counter.
func TestBadInputLeavesStoreUnchanged(t *testing.T) {
	cases := []struct {
		name        string
		initialized bool // the node was learnt before the failure
		breakIt     func(t *testing.T, sim *ec2sim.Sim)
		kind        cloud.Kind
		says        []string
	}{
		{"IMDS unreachable on a fresh node", false, func(t *testing.T, sim *ec2sim.Sim) {
			t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", simtest.ClosedURL(t))
		}, cloud.KindUnreachable, []string{"instance metadata", "not reachable", "AWS_EC2_METADATA_SERVICE_ENDPOINT"}},
		{"EC2 unreachable", true, func(t *testing.T, sim *ec2sim.Sim) {
			t.Setenv("AWS_ENDPOINT_URL_EC2", simtest.ClosedURL(t))
		}, cloud.KindUnreachable, []string{"EC2 endpoint", "not reachable", "AWS_ENDPOINT_URL_EC2"}},
		{"EC2 unreachable on a fresh node", false, func(t *testing.T, sim *ec2sim.Sim) {
			t.Setenv("AWS_ENDPOINT_URL_EC2", simtest.ClosedURL(t))
		}, cloud.KindUnreachable, []string{"DescribeInstances", "not reachable"}},
		{"no credentials", true, func(t *testing.T, sim *ec2sim.Sim) {
			t.Setenv("AWS_ACCESS_KEY_ID", "")
			t.Setenv("AWS_SECRET_ACCESS_KEY", "")
			sim.DetachRole() // no instance role either (IMDS still says who the node is)
		}, cloud.KindNoCredentials, []string{"credentials", "AWS_ACCESS_KEY_ID"}},
		{"DescribeNetworkInterfaces denied", true, func(t *testing.T, sim *ec2sim.Sim) {
			sim.DenyAction("DescribeNetworkInterfaces")
		}, cloud.KindUnauthorized, []string{"not authorized", "ec2:DescribeNetworkInterfaces", "IAM", "vpcctl doctor --iam"}},
		{"DescribeInstanceTypes denied", false, func(t *testing.T, sim *ec2sim.Sim) {
			sim.DenyAction("DescribeInstanceTypes")
		}, cloud.KindUnauthorized, []string{"ec2:DescribeInstanceTypes", "IAM", "vpcctl doctor --iam"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sim := startSim(t, "t3.small")
			dir := t.TempDir()
			if c.initialized {
				attachNode(t, sim, dir, env{}).converge(5)
			}
			c.breakIt(t, sim)
			// A fresh process (a new SDK configuration) that must read EC2:
			// at rest a pass reads IMDS alone and would not see EC2 broken.
			n := attachNode(t, sim, dir, env{settings.EC2ResyncInterval: "0"})
			before := poolSum(t, n.st)
			_, err := n.r.Run(ctxFor(t), Options{})
			if err == nil {
				t.Fatal("the pass succeeded")
			}
			if got := cloud.Classify(err); got != c.kind {
				t.Errorf("kind %v, want %v: %v", got, c.kind, err)
			}
			for _, s := range c.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			if poolSum(t, n.st) != before {
				t.Errorf("the failed pass changed the pool in %s", n.st.Path())
			}
			assertFailureRecorded(t, n.st, c.kind.String(), err)
		})
	}
}
