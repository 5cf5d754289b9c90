package whatif

import (
	"reflect"
	"testing"
	"time"

	"vpc-cni/internal/testsupport/simtest"
	"vpc-cni/sim/ec2sim"
	"vpc-cni/store"
)

// seedOptions is the seed's case: an m4.4xlarge filling up with 232 pods.
var seedOptions = Options{InstanceType: "m4.4xlarge", ENILatency: 5 * time.Second, RefillDelay: time.Second}

func pointAtEmulators(t *testing.T) {
	t.Helper()
	simtest.Start(t, ec2sim.Config{}) // registers the restore of the AWS environment the runs change
}

// The goal for adaptive growth on the seed's case (counts, not
// timings): at most 60 mutating calls, mean idle at most 5, at most 5 % of
// pods finding the pool empty, and at rest exactly WARM_IP_TARGET idle.
func TestAdaptiveGrowthMeetsTheSeedGoal(t *testing.T) {
	pointAtEmulators(t)
	w := Steady(232, 10*time.Second)
	fixed, err := Run(w, Setting{Env: map[string]string{"WARM_IP_TARGET": "1"}, Interval: 30 * time.Second}, seedOptions)
	if err != nil {
		t.Fatal(err)
	}
	ad, err := Run(w, Setting{Env: map[string]string{"WARM_IP_TARGET": "1", "ADAPTIVE_GROWTH_WINDOW": "60s"},
		Interval: 30 * time.Second}, seedOptions)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fixed: %+v", fixed)
	t.Logf("adaptive: %+v", ad)
	if fixed.Mutating < 200 {
		t.Errorf("fixed WARM_IP_TARGET=1 made %d mutating calls; the seed's case costs about one per pod", fixed.Mutating)
	}
	if ad.Mutating > 60 || ad.MeanIdle > 5 || ad.Empty*20 > len(w.Pods) {
		t.Errorf("adaptive: %d mutating calls (≤ 60), mean idle %.1f (≤ 5), %d of %d pods found the pool empty (≤ 5 %%)",
			ad.Mutating, ad.MeanIdle, ad.Empty, len(w.Pods))
	}
	// 232 pods fill the node, so nothing is idle at rest; with room left
	// the batch grown for arrivals goes back once they stop.
	part, err := Run(Steady(100, 10*time.Second), ad.Setting, seedOptions)
	if err != nil {
		t.Fatal(err)
	}
	if part.RestIdle != 1 {
		t.Errorf("adaptive, 100 pods: %d idle at rest, want exactly WARM_IP_TARGET=1 (%+v)", part.RestIdle, part)
	}
}

// The cluster's per-node model makes the same EC2 calls as the real
// reconcile against the emulator on the seed's case, action by action, with
// and without the IMDS steady state and adaptive growth, with an IMDS that
// keeps up and one that lags behind the node's changes.
func TestModelMakesTheRealCalls(t *testing.T) {
	pointAtEmulators(t)
	w := Steady(232, 10*time.Second)
	for _, c := range []struct {
		env map[string]string
		lag time.Duration
	}{
		{map[string]string{"WARM_IP_TARGET": "1"}, 0},
		{map[string]string{"WARM_IP_TARGET": "1"}, 15 * time.Second},
		{map[string]string{"WARM_IP_TARGET": "1", "ADAPTIVE_GROWTH_WINDOW": "60s"}, 0},
		{map[string]string{"WARM_IP_TARGET": "1", "VPC_CNI_EC2_RESYNC_INTERVAL": "0"}, 0},
		{map[string]string{"ENABLE_PREFIX_DELEGATION": "true"}, 5 * time.Second},
	} {
		s := Setting{Env: c.env, Interval: 30 * time.Second}
		o := seedOptions
		o.IMDSLag = c.lag
		n, err := newNode(c.env, o)
		if err != nil {
			t.Fatal(err)
		}
		real, err := replay(n, w, s, o, NewAccount())
		var id string
		if err == nil {
			err = n.st.View(func(tx *store.Tx) error { node, _, err := tx.Node(); id = node.InstanceID; return err })
		}
		n.close()
		if err != nil {
			t.Fatal(err)
		}
		m, err := newModelNode(id, c.env, o) // the same safety-net jitter as the real node's
		if err != nil {
			t.Fatal(err)
		}
		model, err := replay(m, w, s, o, NewAccount())
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(n.passCalls, m.calls) || real.Empty != model.Empty || real.Passes != model.Passes {
			t.Errorf("%s, IMDS lag %s: real calls %v, %d passes, %d pods found it empty; model %v, %d, %d",
				s.Label(), c.lag, n.passCalls, real.Passes, real.Empty, m.calls, model.Passes, model.Empty)
		}
		t.Logf("%s, IMDS lag %s: %v", s.Label(), c.lag, m.calls)
	}
}
