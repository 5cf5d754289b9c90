package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// freshBurstPods is the burst: as many pods at once as a node gets when a
// ReplicaSet lands on it.
const freshBurstPods = 30

// FreshBurst: 30 ADDs at once on a node no pass has seen (an m5.xlarge, 4
// ENIs of 15 addresses, the shipped defaults), so the first ADDs grow the
// pool inline and the rest wait; each round is a new node. It reports the
// slowest ADD of the burst and the median, for vpc-cni and, with
// VPC_CNI_BENCH_BEFORE, an older vpcctl in alternate rounds. The slowest
// ADD is the one that waited longest for an address: the figure the
// refill that leaves a served claim at once (reconcile --refill) is for.
func BenchmarkFreshBurst(b *testing.B) {
	dir := installPlugins(b)
	type contestant struct {
		name      string
		path      string
		add, slow samples
		failed    int    // ADDs that failed (code 11: no address in time)
		why       string // the last failure's answer
		grows     int    // inline grow passes its ADDs ran
	}
	all := []*contestant{{name: "vpc-cni", path: filepath.Join(dir, "vpc-cni")}}
	if before := beforeBinary(b, dir); before != "" {
		all = append(all, &contestant{name: "before", path: before})
	}
	var rounds []func()
	for _, c := range all {
		rounds = append(rounds, func() {
			b.StopTimer()
			w := newWorld(b, worldOpts{instanceType: "m5.xlarge", fresh: true})
			conf := mustJSON(b, w.conf(map[string]any{"backgroundReconcile": true}))
			pods := w.newPods("burst", freshBurstPods)
			b.StartTimer()
			var mu sync.Mutex
			var round samples
			var wg sync.WaitGroup
			for _, p := range pods {
				wg.Add(1)
				go func() {
					defer wg.Done()
					start := time.Now()
					r := w.execInNode(c.path, p.env("ADD"), conf)
					took := time.Since(start)
					mu.Lock()
					defer mu.Unlock()
					round.d = append(round.d, took)
					if r.err != nil {
						c.failed++
						c.why = string(r.stdout)
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			c.add.d = append(c.add.d, round.d...)
			c.slow.d = append(c.slow.d, durationOf(round.max()))
			waitBackgroundPasses(b, filepath.Join(w.stateDir, "plugin.log"))
			if log, err := os.ReadFile(filepath.Join(w.stateDir, "plugin.log")); err == nil {
				c.grows += strings.Count(string(log), `msg="inline grow"`)
			}
			b.StartTimer()
		})
	}
	rotated(b, rounds)
	var tab strings.Builder
	fmt.Fprintf(&tab, "\nfresh-node burst of %d ADDs at once (%d rounds each)\n%-10s %12s %12s %12s %8s %8s\n",
		freshBurstPods, len(all[0].slow.d), "contestant", "ADD p50 ms", "ADD p90 ms", "slowest ms", "failed", "grows")
	for _, c := range all {
		c.add.report(b, "freshburst-"+c.name+"-add")
		b.ReportMetric(c.slow.pct(0.5), "freshburst-"+c.name+"-slowest-p50-ms")
		fmt.Fprintf(&tab, "%-10s %12.1f %12.1f %12.1f %8d %8d\n", c.name, c.add.pct(0.5), c.add.pct(0.9), c.slow.pct(0.5), c.failed, c.grows)
		if c.why != "" {
			b.Logf("%s's last failed ADD: %s", c.name, c.why)
		}
	}
	fmt.Fprintf(&tab, "slowest: the median over rounds of each burst's slowest ADD; load average %s", loadAvg())
	b.Log(tab.String())
}

func durationOf(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }
