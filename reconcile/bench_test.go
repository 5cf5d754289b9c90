package reconcile

import (
	"errors"
	"net/netip"
	"slices"
	"strconv"
	"testing"
	"time"

	"vpc-cni/pool"
	"vpc-cni/sim/ec2sim"
	"vpc-cni/store"
)

// arrivalPods is how many pods arrive on the m4.4xlarge: all its 8 ENIs x 29
// secondary addresses. (Its max-pods formula, 8*29+2 = 234, counts two
// host-network pods that need no address; the reference's 240-pod case
// cannot place more than 232 either.)
const arrivalPods = 232

// The reference's worst case: pods arriving on an m4.4xlarge one at a time
// (a pass after each) or in bursts of 10, counting EC2 mutating calls and the
// pods that found no free address at arrival. The reference made 240
// AssignPrivateIpAddresses calls with WARM_IP_TARGET=1, and 8 to 16 calls
// with the default WARM_ENI_TARGET=1.
func BenchmarkArrivals(b *testing.B) {
	for _, burst := range []int{1, 10} {
		for _, target := range []env{{"WARM_IP_TARGET": "1"}, {"WARM_ENI_TARGET": "1"}} {
			name := "burst=" + strconv.Itoa(burst) + "/" + label(target)
			b.Run(name, func(b *testing.B) {
				var r arrivalResult
				for b.Loop() {
					r = arrivals(b, target, burst)
				}
				b.ReportMetric(float64(r.mutating), "mutating-calls")
				b.ReportMetric(float64(r.assigns), "assign-calls")
				b.ReportMetric(float64(r.creates), "create-eni-calls")
				b.ReportMetric(float64(r.denied), "pods-without-address")
				b.ReportMetric(float64(r.passes), "passes")
				b.Logf("m4.4xlarge %d pods, bursts of %d, %s: %d mutating EC2 calls (%d Assign, %d CreateENI), "+
					"%d pods found no free address at arrival, %d passes (reference: 240 Assign with WARM_IP_TARGET=1, 8-16 calls default)",
					arrivalPods, burst, label(target), r.mutating, r.assigns, r.creates, r.denied, r.passes)
			})
		}
	}
}

type arrivalResult struct{ mutating, assigns, creates, denied, passes int }

func label(e env) string {
	for k, v := range e {
		return k + "=" + v
	}
	return "defaults"
}

// arrivals runs one arrival scenario on a fresh node whose pool is at its
// targets with no pods; pods that find no address wait for the next pass.
func arrivals(b *testing.B, target env, burst int) arrivalResult {
	b.StopTimer()
	n := newNode(b, "m4.4xlarge", target)
	n.converge(5)
	n.sim.ResetCounters()
	b.StartTimer()
	var r arrivalResult
	for n.pods < arrivalPods {
		var waiting []string
		for range min(burst, arrivalPods-n.pods) {
			a, err := n.addPod()
			if errors.Is(err, store.ErrNoFreeAddress) {
				waiting = append(waiting, a.Key)
			} else if err != nil {
				b.Fatal(err)
			}
		}
		r.denied += len(waiting)
		n.markWaiting(waiting, true) // as the plugin's ADD does before its inline grow
		placeWaiting(b, n, waiting, &r)
	}
	if got := len(n.assignments()); got != arrivalPods {
		b.Fatalf("%d pods placed, want %d", got, arrivalPods)
	}
	c := n.sim.Counters()
	r.mutating, r.assigns, r.creates = mutating(c), c["AssignPrivateIpAddresses"], c["CreateNetworkInterface"]
	return r
}

// placeWaiting runs the pass after the arrivals, then more passes until every
// waiting pod has an address.
func placeWaiting(b *testing.B, n *node, waiting []string, r *arrivalResult) {
	for tries := 0; ; tries++ {
		n.pass()
		r.passes++
		var still, placed []string
		for _, key := range waiting {
			if _, err := n.takeFor(key); errors.Is(err, store.ErrNoFreeAddress) {
				still = append(still, key)
			} else if err != nil {
				b.Fatal(err)
			} else {
				placed = append(placed, key)
			}
		}
		n.markWaiting(placed, false)
		if waiting = still; len(waiting) == 0 {
			return
		}
		if tries > 20 {
			b.Fatalf("%d pods found no address after %d passes", len(waiting), tries)
		}
	}
}

// markWaiting records pods that wait for an address (or drops them).
func (n *node) markWaiting(keys []string, on bool) {
	n.t.Helper()
	err := n.st.Update(func(tx *store.Tx) error {
		for _, k := range keys {
			var err error
			if on {
				err = tx.PutWaiter(k, pool.DefaultPool, n.clock.Now().Add(time.Minute), n.clock.Now())
			} else {
				err = tx.DeleteWaiter(k)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		n.t.Fatalf("waiters: %v", err)
	}
}

// Steady-state passes over pools of 10, 1,000 and 10,000 addresses: wall
// time per pass (median, p99) and EC2 calls per pass.
func BenchmarkSteadyState(b *testing.B) {
	cases := []struct {
		name, instance string
		env            env
		addrs          int
	}{
		{"addrs=10/m5.large", "m5.large", env{"WARM_IP_TARGET": "1", "MINIMUM_IP_TARGET": "10"}, 10},
		{"addrs=1000/m5.4xlarge-prefix", "m5.4xlarge", env{"ENABLE_PREFIX_DELEGATION": "true",
			"WARM_IP_TARGET": "1", "MINIMUM_IP_TARGET": "1000", "MAX_PODS": "1000"}, 1008},
		{"addrs=10000/p3dn.24xlarge-prefix", "p3dn.24xlarge", env{"ENABLE_PREFIX_DELEGATION": "true",
			"WARM_IP_TARGET": "1", "MINIMUM_IP_TARGET": "10000", "MAX_PODS": "10000"}, 10000},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			sim := startSimConfig(b, ec2sim.Config{InstanceType: c.instance,
				SubnetCIDR: netip.MustParsePrefix("100.64.0.0/17")})
			n := attachNode(b, sim, b.TempDir(), c.env)
			n.converge(10)
			if _, addrs := simHeld(sim); addrs != c.addrs {
				b.Fatalf("pool of %d addresses, want %d", addrs, c.addrs)
			}
			sim.ResetCounters()
			var times []time.Duration
			for b.Loop() {
				start := time.Now()
				n.pass()
				times = append(times, time.Since(start))
			}
			calls := 0
			for _, v := range sim.Counters() {
				calls += v
			}
			med, p99 := percentile(times, 50), percentile(times, 99)
			perPass := float64(calls) / float64(len(times))
			b.ReportMetric(float64(med.Microseconds())/1000, "ms-median")
			b.ReportMetric(float64(p99.Microseconds())/1000, "ms-p99")
			b.ReportMetric(perPass, "calls/pass")
			b.Logf("steady state, %d addresses on %s: median %s, p99 %s per pass, %.2f EC2 calls per pass (%v), %d passes",
				c.addrs, c.instance, med.Round(time.Microsecond), p99.Round(time.Microsecond), perPass, sim.Counters(), len(times))
		})
	}
}

func percentile(ts []time.Duration, p int) time.Duration {
	if len(ts) == 0 {
		return 0
	}
	s := slices.Clone(ts)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}
