package whatif

import (
	"testing"
	"time"

	"vpc-cni/cloud"
)

// The model's node budget is the client's: the same defaults, its burst
// spent at once, then one call per 1/rate, and a wait past the deadline
// sends nothing and takes no token.
func TestNodeBudgetIsTheClients(t *testing.T) {
	b, err := newNodeBudget(map[string]string{"VPC_CNI_EC2_MUTATING_RATE": "0.5"})
	if err != nil {
		t.Fatal(err)
	}
	if b.rates[cloud.BucketDescribe] != cloud.DefaultDescribeBudget {
		t.Errorf("describe budget %+v, want the client's default %+v", b.rates[cloud.BucketDescribe], cloud.DefaultDescribeBudget)
	}
	at := epoch()
	for i := range 5 { // burst: ten seconds' worth
		if wait, ok := b.take("AssignPrivateIpAddresses", at, time.Minute); wait != 0 || !ok {
			t.Fatalf("call %d of the burst waited %v (ok %v)", i, wait, ok)
		}
	}
	if wait, ok := b.take("CreateNetworkInterface", at, time.Minute); wait != 2*time.Second || !ok {
		t.Errorf("sixth call: wait %v ok %v, want 2s (rate 0.5/s)", wait, ok)
	}
	if wait, ok := b.take("CreateNetworkInterface", at, time.Second); ok || wait != 4*time.Second {
		t.Errorf("seventh call with 1s to the deadline: wait %v ok %v, want refused at 4s", wait, ok)
	}
	if wait, ok := b.take("CreateNetworkInterface", at, time.Minute); wait != 4*time.Second || !ok {
		t.Errorf("the refused call took a token: next wait %v ok %v, want 4s", wait, ok)
	}
	if wait, ok := b.take("DescribeNetworkInterfaces", at, 0); wait != 0 || !ok {
		t.Errorf("describe waited %v (ok %v) on the mutating bucket", wait, ok)
	}
}

// Nodes booted together pass in step: every pass asks EC2 at the same
// instant, the account's buckets overflow between passes, and the scale-up
// takes far longer than with timers spread out; the timer's jitter
// (RandomizedDelaySec) spreads them again (counts on the virtual clock).
func TestNodesBootedTogetherNeedTheTimersJitter(t *testing.T) {
	o := ClusterOptions{Options: Options{InstanceType: "m5.xlarge", ENILatency: 5 * time.Second,
		RefillDelay: time.Second, Rest: 10 * time.Minute}, Nodes: 1000, PodsPerNode: 30, Together: true}
	s := Setting{Env: map[string]string{"WARM_IP_TARGET": "1"}, Interval: 30 * time.Second}
	inStep, err := Cluster(s, o)
	if err != nil {
		t.Fatal(err)
	}
	o.TimerJitter = 30 * time.Second
	jittered, err := Cluster(s, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("in step: %v, %d wasted; jittered: %v, %d wasted", inStep.ScaleUp, inStep.Wasted, jittered.ScaleUp, jittered.Wasted)
	if jittered.ScaleUp*3/2 > inStep.ScaleUp || jittered.Wasted*2 > inStep.Wasted {
		t.Errorf("jitter did not spread the nodes: scale-up %v → %v, wasted %d → %d",
			inStep.ScaleUp, jittered.ScaleUp, inStep.Wasted, jittered.Wasted)
	}
}
