package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
)

// floodScrapers is how many keep-alive clients scrape /metrics at once.
const floodScrapers = 1000

// loopMemoryLimit is the DaemonSet's memory limit for the loop (the chart's
// resources.limits.memory).
const loopMemoryLimit = 128 << 20

// ADD under a scrape flood: the DaemonSet's loop (`vpcctl reconcile --every
// 30s --metrics-listen`, the binary built with the Makefile's flags) runs in
// the node's netns; b.N ADD+DEL rounds of one pod through the plugin binary
// are timed with no scraper, then b.N more while floodScrapers keep-alive
// clients scrape /metrics as fast as they are answered. Targets: every ADD
// succeeds, flood ADD p95 within 3x the baseline's, the loop's peak RSS
// under loopMemoryLimit. Run it with
//
//	make bench-scrape-flood   (go test ./e2e -run '^$' -bench ScrapeFlood -benchtime 100x)
func BenchmarkAddUnderScrapeFlood(b *testing.B) {
	w := warmWorld(b)
	conf := mustJSON(b, w.conf(nil))
	lp := startServingLoop(b, w, "--every", "30s")
	base := lp.stats()

	var quiet, flood samples
	rounds := b.N
	b.ResetTimer()
	for range rounds {
		addDelRound(b, w, conf, &quiet)
	}
	quietStats := lp.stats()

	f := startFlood(b, w, lp.addr, floodScrapers)
	waitUntil(b, "the flood answered 50 scrapes", func() bool { return f.answered.Load() >= 50 })
	watch := lp.watch()
	floodStart, answeredAtStart := time.Now(), f.answered.Load()
	for range rounds {
		addDelRound(b, w, conf, &flood)
	}
	answered, elapsed := f.answered.Load()-answeredAtStart, time.Since(floodStart)
	peak := watch.stop()
	f.stop()
	b.StopTimer()

	b.ReportMetric(quiet.pct(0.5), "quiet-add-p50-ms")
	b.ReportMetric(quiet.pct(0.95), "quiet-add-p95-ms")
	b.ReportMetric(flood.pct(0.5), "flood-add-p50-ms")
	b.ReportMetric(flood.pct(0.95), "flood-add-p95-ms")
	if q := quiet.pct(0.95); q > 0 {
		b.ReportMetric(flood.pct(0.95)/q, "p95-ratio")
	}
	b.ReportMetric(float64(answered)/elapsed.Seconds(), "scrapes-answered/s")
	b.ReportMetric(float64(peak.hwm)/(1<<20), "loop-peak-rss-MiB")
	b.ReportMetric(float64(peak.fds), "loop-peak-fds")
	b.ReportMetric(float64(peak.threads), "loop-peak-threads")
	b.Logf("loop before: rss %.1f MiB, %d fds, %d threads; after the quiet rounds: %.1f MiB, %d fds, %d threads",
		float64(base.rss)/(1<<20), base.fds, base.threads, float64(quietStats.rss)/(1<<20), quietStats.fds, quietStats.threads)
	if peak.hwm >= loopMemoryLimit {
		b.Errorf("the loop's peak RSS %d MiB reached the DaemonSet's limit (%d MiB)", peak.hwm>>20, loopMemoryLimit>>20)
	}
}

// addDelRound times the ADD of a fresh pod (a failed ADD fails the
// benchmark), then DELs it and removes its netns off the clock.
func addDelRound(b *testing.B, w *world, conf []byte, s *samples) {
	b.StopTimer()
	p := w.newPod("flood")
	b.StartTimer()
	s.timed(b, func() run { return w.execInNode(bin("vpc-cni"), p.env("ADD"), conf) })
	b.StopTimer()
	if r := w.execInNode(bin("vpc-cni"), p.env("DEL"), conf); r.err != nil {
		b.Fatalf("DEL: %v\n%s", r.err, r.stderr)
	}
	_ = p.ns.Close()
	b.StartTimer()
}

// servingLoop is the DaemonSet's container process, running in the node.
type servingLoop struct {
	cmd    *exec.Cmd
	addr   string        // host:port in the node netns
	tail   tailWriter    // the end of its stderr, after the serving line
	exited chan struct{} // closed when its stderr ends (the process exited)
}

// tailWriter keeps the last 4 KiB written to it.
type tailWriter struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - 4<<10; over > 0 {
		t.buf = t.buf[over:]
	}
	return len(p), nil
}

func (t *tailWriter) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// startServingLoop starts `vpcctl reconcile ARGS... --timeout 25s -o
// summary --metrics-listen 127.0.0.1:0` (ARGS: --every and what else the
// caller gives) in the node, and returns once it serves.
func startServingLoop(b testing.TB, w *world, args ...string) *servingLoop {
	b.Helper()
	args = append(append([]string{"--state-dir", w.stateDir, "reconcile"}, args...),
		"--timeout", "25s", "-o", "summary", "--metrics-listen", "127.0.0.1:0")
	lp := &servingLoop{cmd: exec.Command(bin("vpcctl"), args...)}
	lp.cmd.Env = os.Environ()
	stderr, err := lp.cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	w.inNode(func() error { return lp.cmd.Start() })
	b.Cleanup(func() {
		_ = lp.cmd.Process.Signal(syscall.SIGTERM)
		_ = lp.cmd.Wait()
	})
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if a, ok := strings.CutPrefix(sc.Text(), "vpcctl: serving /metrics and /healthz on http://"); ok {
			lp.addr = a
			break
		}
	}
	if lp.addr == "" {
		b.Fatal("the loop ended without serving")
	}
	lp.exited = make(chan struct{})
	go func() {
		_, _ = io.Copy(&lp.tail, stderr)
		close(lp.exited)
	}()
	return lp
}

// procStats are one reading of the loop's /proc.
type procStats struct {
	rss, hwm     int64 // bytes
	fds, threads int
}

func (lp *servingLoop) stats() procStats {
	var s procStats
	dir := filepath.Join("/proc", strconv.Itoa(lp.cmd.Process.Pid))
	status, _ := os.ReadFile(filepath.Join(dir, "status"))
	for _, line := range strings.Split(string(status), "\n") {
		k, v, _ := strings.Cut(line, ":")
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmRSS":
			s.rss = n << 10
		case "VmHWM":
			s.hwm = n << 10
		case "Threads":
			s.threads = int(n)
		}
	}
	fds, _ := os.ReadDir(filepath.Join(dir, "fd"))
	s.fds = len(fds)
	return s
}

// metricsConns counts the loop's TCP connections on its metrics port
// (sockets of its fds, in its namespace's /proc/net/tcp{,6}, not listening).
func (lp *servingLoop) metricsConns() int {
	pid := strconv.Itoa(lp.cmd.Process.Pid)
	_, port, _ := net.SplitHostPort(lp.addr)
	p, _ := strconv.Atoi(port)
	want := fmt.Sprintf(":%04X", p)
	mine := map[string]bool{}
	fds, _ := os.ReadDir(filepath.Join("/proc", pid, "fd"))
	for _, fd := range fds {
		if l, err := os.Readlink(filepath.Join("/proc", pid, "fd", fd.Name())); err == nil && strings.HasPrefix(l, "socket:[") {
			mine[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	n := 0
	for _, table := range []string{"tcp", "tcp6"} {
		b, _ := os.ReadFile(filepath.Join("/proc", pid, "net", table))
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			// sl local rem st ... inode (field 9); st 0A is LISTEN.
			if len(f) > 9 && strings.HasSuffix(f[1], want) && f[3] != "0A" && mine[f[9]] {
				n++
			}
		}
	}
	return n
}

// statWatch keeps the highest fds and threads seen (RSS's peak is the
// kernel's VmHWM).
type statWatch struct {
	done chan struct{}
	mu   sync.Mutex
	peak procStats
}

func (lp *servingLoop) watch() *statWatch {
	sw := &statWatch{done: make(chan struct{})}
	go func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			s := lp.stats()
			sw.mu.Lock()
			sw.peak.hwm = max(sw.peak.hwm, s.hwm)
			sw.peak.fds = max(sw.peak.fds, s.fds)
			sw.peak.threads = max(sw.peak.threads, s.threads)
			sw.mu.Unlock()
			select {
			case <-sw.done:
				return
			case <-tick.C:
			}
		}
	}()
	return sw
}

func (sw *statWatch) stop() procStats {
	close(sw.done)
	sw.mu.Lock()
	defer sw.mu.Unlock()
	return sw.peak
}

// flood is n clients, each with its own keep-alive connection (dialled
// from the node netns), scraping /metrics in a loop.
type flood struct {
	answered atomic.Int64
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

func startFlood(b testing.TB, w *world, addr string, n int) *flood {
	ctx, cancel := context.WithCancel(context.Background())
	f := &flood{cancel: cancel}
	dial := func(ctx context.Context, network, a string) (net.Conn, error) {
		var c net.Conn
		err := w.node.Do(func(ns.NetNS) (err error) {
			c, err = (&net.Dialer{}).DialContext(ctx, network, a)
			return err
		})
		return c, err
	}
	for range n {
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			tr := &http.Transport{DialContext: dial, MaxIdleConnsPerHost: 1}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
				resp, err := client.Do(req)
				if err != nil { // a timeout after waiting its turn; do not spin on it
					select {
					case <-ctx.Done():
					case <-time.After(100 * time.Millisecond):
					}
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					f.answered.Add(1)
				}
			}
		}()
	}
	b.Cleanup(f.stop)
	return f
}

func (f *flood) stop() {
	f.cancel()
	f.wg.Wait()
}

func waitUntil(b testing.TB, what string, ok func() bool) {
	b.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !ok() {
		if time.Now().After(deadline) {
			b.Fatalf("%s: never happened", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
