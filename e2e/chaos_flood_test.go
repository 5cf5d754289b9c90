package e2e

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"syscall"
	"time"

	"vpc-cni/metrics"
)

var chaosScrapeFlood = flag.Bool("chaos.scrape-flood", true, "TestChaos runs the DaemonSet's loop with --metrics-listen and floods its port with keep-alive scrapers at random moments")

const (
	// chaosScrapers is how many keep-alive clients one flood phase starts.
	chaosScrapers = 300
	// loopFdsSlack is what the loop may hold besides its scrapers'
	// connections while a pass runs: the state file and its locks, netlink
	// sockets, the SDK's keep-alive connections to EC2 and IMDS.
	loopFdsSlack = 32
	// loopMaxThreads bounds the loop's OS threads: the Go runtime's few,
	// plus one per netlink or file call blocked at once.
	loopMaxThreads = 64
)

// startLoop starts the DaemonSet's loop (a pass every 10 s, serving
// /metrics) for the run, when the scrape flood is on; the killer leaves it
// alone (the flood is its fault).
func (c *chaos) startLoop() {
	if !*chaosScrapeFlood {
		return
	}
	c.loop = startServingLoop(c.w.tb, c.w, "--every", "10s", "--cni-cache-dir", c.cacheDir)
	c.loopStart = c.loop.stats()
	c.loopPeak = c.loop.watch()
}

// scrapeFlooder floods the loop's metrics port in phases: chaosScrapers
// keep-alive clients scraping as fast as they are answered for 5-15 s,
// then none for 2-6 s, while ADDs, DELs, passes and the other faults run.
func (c *chaos) scrapeFlooder() {
	if c.loop == nil {
		return
	}
	for !c.stopped() {
		c.pause(time.Duration(2000+rand.IntN(4000)) * time.Millisecond)
		if c.stopped() {
			return
		}
		f := startFlood(c.w.tb, c.w, c.loop.addr, chaosScrapers)
		c.floods.Add(1)
		c.pause(time.Duration(5000+rand.IntN(10000)) * time.Millisecond)
		f.stop()
		c.scrapes.Add(f.answered.Load())
	}
}

// checkLoop: the loop still runs, never held more than the server's
// connections plus its own files, stayed under the DaemonSet's memory limit
// and a fixed number of threads, and after the last flood its files fall
// back to what it held at the start.
func (c *chaos) checkLoop() {
	if c.loop == nil {
		return
	}
	select {
	case <-c.loop.exited:
		c.violate("the DaemonSet's loop exited during the run: %s", c.loop.tail.String())
		return
	default:
	}
	peak := c.loopPeak.stop()
	c.loopEnd = peak
	if peak.hwm >= loopMemoryLimit {
		c.violate("the loop's peak RSS %d MiB reached the DaemonSet's limit (%d MiB)", peak.hwm>>20, loopMemoryLimit>>20)
	}
	if limit := c.loopStart.fds + metrics.MaxConns + loopFdsSlack; peak.fds > limit {
		c.violate("the loop held %d fds at its peak, more than %d (%d at the start + %d connections + %d)",
			peak.fds, limit, c.loopStart.fds, metrics.MaxConns, loopFdsSlack)
	}
	if peak.threads > loopMaxThreads {
		c.violate("the loop ran %d threads at its peak, more than %d", peak.threads, loopMaxThreads)
	}
	// The flood's connections are gone a minute later. Counted by the
	// metrics port, not as all fds: the loop's own EC2 and IMDS clients keep
	// idle keep-alive connections for 90 s (the SDK's transport), as many as
	// its passes' calls ran at once.
	deadline := time.Now().Add(time.Minute)
	for c.loop.metricsConns() > 0 {
		if time.Now().After(deadline) {
			c.violate("a minute after the last flood the loop still holds %d connections on its metrics port (%d fds, %d at the start)",
				c.loop.metricsConns(), c.loop.stats().fds, c.loopStart.fds)
			return
		}
		time.Sleep(100 * time.Millisecond) // polling the loop's /proc for a condition, with a deadline
	}
}

// floodSummary is the summary's part about the flood.
func (c *chaos) floodSummary() string {
	if c.loop == nil {
		return "scrape flood off, "
	}
	return fmt.Sprintf("scrape flood phases %d (%d scrapers each, %d scrapes answered), the loop's RSS %.1f MiB at the start, "+
		"%.1f MiB at its peak, fds %d, %d, threads %d, %d, ",
		c.floods.Load(), chaosScrapers, c.scrapes.Load(), float64(c.loopStart.rss)/(1<<20), float64(c.loopEnd.hwm)/(1<<20),
		c.loopStart.fds, c.loopEnd.fds, c.loopStart.threads, c.loopEnd.threads)
}

// stopLoop ends the loop before the quiesce, so that only the quiesce's
// passes change the node while the checks read it.
func (c *chaos) stopLoop() {
	if c.loop == nil {
		return
	}
	_ = c.loop.cmd.Process.Signal(syscall.SIGTERM)
	<-c.loop.exited
}
