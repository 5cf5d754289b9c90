package whatif

import (
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"vpc-cni/cloud"
	"vpc-cni/settings"
)

// passDeadline is the timer pass's --timeout: a call that would wait longer
// for the node's budget is not made (the client's ClientRateBudget error).
const passDeadline = 2 * time.Minute

// nodeBudget is the node's client-side EC2 budget (cloud/budget.go): a
// describe and a mutating bucket, the same defaults, the same knobs
// (VPC_CNI_EC2_DESCRIBE_RATE, VPC_CNI_EC2_MUTATING_RATE).
type nodeBudget struct {
	rates   map[string]cloud.BucketRate
	buckets map[string]*bucket
}

func newNodeBudget(env map[string]string) (*nodeBudget, error) {
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	describe, mutating, err := settings.EC2Budgets(settings.Inputs{Env: lookup})
	if err != nil {
		return nil, err
	}
	rates := map[string]cloud.BucketRate{cloud.BucketDescribe: cloud.DefaultDescribeBudget,
		cloud.BucketMutating: cloud.DefaultMutatingBudget}
	if describe != (settings.Budget{}) {
		rates[cloud.BucketDescribe] = cloud.BucketRate(describe)
	}
	if mutating != (settings.Budget{}) {
		rates[cloud.BucketMutating] = cloud.BucketRate(mutating)
	}
	return &nodeBudget{rates: rates, buckets: map[string]*bucket{}}, nil
}

// take spends a token for action at t, or at t+wait when the bucket is
// empty (the client sleeps until then); a wait beyond limit takes nothing
// and reports ok false.
func (b *nodeBudget) take(action string, t time.Time, limit time.Duration) (wait time.Duration, ok bool) {
	if strings.HasPrefix(action, "IMDS") {
		return 0, true
	}
	name := cloud.BucketMutating
	if strings.HasPrefix(action, "Describe") {
		name = cloud.BucketDescribe
	}
	r := b.rates[name]
	k := b.buckets[name]
	if k == nil {
		k = &bucket{max: r.Burst, rate: r.Rate, tokens: r.Burst, at: t}
		b.buckets[name] = k
	}
	if t.After(k.at) {
		k.tokens = min(k.max, k.tokens+t.Sub(k.at).Seconds()*k.rate)
		k.at = t
	}
	if k.tokens >= 1 && !k.at.After(t) {
		k.tokens--
		return 0, true
	}
	// The token comes at k.at (a wait already promised) plus its refill.
	wait = k.at.Sub(t) + time.Duration((1-k.tokens)/k.rate*float64(time.Second))
	if wait > limit {
		return wait, false
	}
	k.tokens, k.at = 0, t.Add(wait)
	return wait, true
}

// Backoff is a node-side back-off the cluster model can try: growth waits
// after EC2 throttled it (RequestLimitExceeded), Base after the first
// throttled pass, doubled for each one after it up to Max. The zero Backoff
// never waits, as reconcile does not (docs/targets.md, cluster scale: the runs show
// it slows the scale-up).
type Backoff struct{ Base, Max time.Duration }

// Until is when growth may call EC2 again after the streak-th throttled pass
// in a row (0: the first), jittered to between half and all of the delay by
// a hash of the instance and now, so nodes throttled together come back apart.
func (b Backoff) Until(instanceID string, now time.Time, streak int) time.Time {
	if b.Base <= 0 {
		return time.Time{}
	}
	d := b.Base
	for range min(streak, 30) {
		if d >= b.Max {
			break
		}
		d *= 2
	}
	d = min(d, max(b.Max, b.Base))
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%d", instanceID, now.UnixNano())
	frac := float64(h.Sum64()%10000) / 10000 // [0, 1)
	return now.Add(time.Duration(float64(d) * (0.5 + 0.5*frac)))
}
