package reconcile

import (
	"errors"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"vpc-cni/sim/ec2sim"
	"vpc-cni/store"
)

// soakPasses is 50 in CI; VPC_CNI_SOAK_PASSES asks for a longer soak.
func soakPasses(t *testing.T) int {
	if v, err := strconv.Atoi(os.Getenv("VPC_CNI_SOAK_PASSES")); err == nil && v > 0 {
		return v
	}
	return 50
}

// Under throttling and server errors, with pods coming and going between
// passes, nothing leaks and nothing is owned twice; once the faults stop the
// pool converges to its targets and EC2 and the store agree exactly.
func TestFaultSoak(t *testing.T) {
	const warm, minimum = 2, 4
	n := newNode(t, "m5.large", env{"WARM_IP_TARGET": strconv.Itoa(warm), "MINIMUM_IP_TARGET": strconv.Itoa(minimum),
		"IP_COOLDOWN_PERIOD": "1s", "RELEASE_DELAY": "3s"})
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("VPC_CNI_SOAK_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("seed %d (VPC_CNI_SOAK_SEED to replay)", seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	n.sim.SetFaults(ec2sim.Faults{ThrottleRate: 0.3, ServerErrorRate: 0.1, Seed: int64(seed)})

	var live []string
	failures, denied := 0, 0
	for i := 0; i < soakPasses(t); i++ {
		live, denied = churn(t, n, rng, live, denied)
		if _, err := n.r.Run(ctxFor(t), Options{}); err != nil {
			failures++
		}
		n.clock.Advance(time.Second)
	}
	t.Logf("%d passes failed under faults; %d pod arrivals found no free address; %d pods live",
		failures, denied, len(live))

	n.sim.SetFaults(ec2sim.Faults{})
	settle(t, n)
	want := max(len(live)+warm, minimum)
	if _, addrs := simHeld(n.sim); addrs != want {
		t.Errorf("EC2 holds %d pod addresses for %d pods; want %d (WARM_IP_TARGET=%d MINIMUM_IP_TARGET=%d)",
			addrs, len(live), want, warm, minimum)
	}
	if got := len(n.assignments()); got != len(live) {
		t.Errorf("%d assignments, %d pods live", got, len(live))
	}
	checkAgrees(t, n.sim, n.st)
}

// soakMaxPods keeps the pods below m5.large's 27 pod addresses, so the
// targets, not the instance, bound the pool.
const soakMaxPods = 20

// churn adds and removes a few pods at random, as the plugin would.
func churn(t *testing.T, n *node, rng *rand.Rand, live []string, denied int) ([]string, int) {
	for range rng.IntN(4) {
		if len(live) >= soakMaxPods {
			break
		}
		a, err := n.addPod()
		switch {
		case errors.Is(err, store.ErrNoFreeAddress):
			denied++
		case err != nil:
			t.Fatalf("take: %v", err)
		default:
			live = append(live, a.Key)
		}
	}
	for range rng.IntN(3) {
		if len(live) == 0 {
			break
		}
		i := rng.IntN(len(live))
		n.delPod(live[i])
		live = append(live[:i], live[i+1:]...)
	}
	return live, denied
}

// settle runs clean passes, past the cooldown and release delay, until one
// plans nothing and the next does too.
func settle(t *testing.T, n *node) {
	t.Helper()
	empty := 0
	for i := 0; i < 12 && empty < 2; i++ {
		n.clock.Advance(4 * time.Second)
		rep, err := n.r.Run(ctxFor(t), Options{})
		if err != nil {
			t.Logf("clean pass %d: %v", i, err)
			empty = 0
			continue
		}
		if rep.Plan.Empty() && len(rep.Failed) == 0 {
			empty++
		} else {
			empty = 0
		}
	}
	if empty < 2 {
		t.Fatalf("the pool did not settle in 12 clean passes; store: %s", n.storeSummary())
	}
	// An ENI whose attach and cleanup both failed under the faults is left
	// detached and unknown to the store: the leak sweep, every
	// LeakSweepEvery, deletes it (once it is leakAge old: it may be a pass's
	// still being attached). Nothing leaks for longer.
	n.clock.Advance(LeakSweepEvery)
	if _, err := n.r.Run(ctxFor(t), Options{}); err != nil {
		t.Fatalf("the pass after the leak age: %v", err)
	}
}
