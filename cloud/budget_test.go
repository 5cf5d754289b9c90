package cloud

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"vpc-cni/sim/ec2sim"
)

// fakeBudget answers from a script: waits[i] for the i-th TakeToken.
type fakeBudget struct {
	mu      sync.Mutex
	waits   []time.Duration
	err     error
	buckets []string
	rates   map[string]BucketRate
}

func (f *fakeBudget) TakeToken(bucket string, _ time.Time, rate, burst float64) (time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.buckets = append(f.buckets, bucket)
	if f.rates == nil {
		f.rates = map[string]BucketRate{}
	}
	f.rates[bucket] = BucketRate{rate, burst}
	if f.err != nil {
		return 0, f.err
	}
	if len(f.waits) == 0 {
		return 0, nil
	}
	w := f.waits[0]
	f.waits = f.waits[1:]
	return w, nil
}

func TestBudgetBucketsPerAction(t *testing.T) {
	sim := startSim(t, ec2sim.Config{})
	b := &fakeBudget{waits: []time.Duration{time.Millisecond}} // first ask: wait, then ask again
	c := newClient(t, Options{Budget: b})
	ctx := testCtx(t)
	st := sim.State()
	if _, err := c.Subnet(ctx, st.SubnetID); err != nil {
		t.Fatal(err)
	}
	if err := c.TagENI(ctx, st.ENIs[0].ID, map[string]string{"a": "b"}); err != nil {
		t.Fatal(err)
	}
	want := []string{BucketDescribe, BucketDescribe, BucketMutating}
	if len(b.buckets) != len(want) || b.buckets[0] != want[0] || b.buckets[1] != want[1] || b.buckets[2] != want[2] {
		t.Fatalf("buckets taken %v, want %v", b.buckets, want)
	}
	if b.rates[BucketDescribe] != DefaultDescribeBudget || b.rates[BucketMutating] != DefaultMutatingBudget {
		t.Fatalf("rates %v", b.rates)
	}
}

// TestBudgetRetriesPay: every SDK attempt takes a token, as EC2 counts them.
func TestBudgetRetriesPay(t *testing.T) {
	sim := startSim(t, ec2sim.Config{})
	b := &fakeBudget{}
	c := newClient(t, Options{Budget: b})
	sim.FailNext("DescribeSubnets", "RequestLimitExceeded", 2)
	if _, err := c.Subnet(testCtx(t), sim.State().SubnetID); err != nil {
		t.Fatal(err)
	}
	if len(b.buckets) != 3 {
		t.Fatalf("tokens taken %d, want 3 (one per attempt)", len(b.buckets))
	}
}

func TestBudgetBeyondDeadlineIsThrottled(t *testing.T) {
	sim := startSim(t, ec2sim.Config{})
	b := &fakeBudget{waits: []time.Duration{time.Hour}}
	c := newClient(t, Options{Budget: b})
	st := sim.State()
	sim.ResetCounters()
	_, err := c.Subnet(testCtx(t), st.SubnetID)
	wantKind(t, err, KindThrottled, "ec2:DescribeSubnets", "ec2-describe")
	var ce *Error
	if !errors.As(err, &ce) || ce.Code != "ClientRateBudget" {
		t.Fatalf("error %#v, want code ClientRateBudget", err)
	}
	if n := sim.Counters()["DescribeSubnets"]; n != 0 {
		t.Fatalf("EC2 was called %d times without a token", n)
	}

	b.err = errors.New("database locked")
	_, err = c.Subnet(context.Background(), st.SubnetID)
	wantKind(t, err, KindOther, "rate budget", "database locked")
}
