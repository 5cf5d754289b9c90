package commands

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"vpc-cni/internal/testsupport/promtext"
	"vpc-cni/metrics"
	"vpc-cni/store"
)

// runningLoop is a running `vpcctl reconcile --every ... --metrics-listen`.
type runningLoop struct {
	cmd    *exec.Cmd
	base   string      // http://host:port
	lines  chan string // stdout's lines (beyond 1024 unread, dropped)
	mu     sync.Mutex
	stderr bytes.Buffer // every line, for waits and failure messages
}

// startLoop starts the loop on an ephemeral port and returns once the
// listener's line is on stderr; SIGTERM and a wait end it at cleanup.
func startLoop(t *testing.T, env []string, dir string, args ...string) *runningLoop {
	t.Helper()
	l := startLoopOn(t, env, dir, "127.0.0.1:0", args...)
	line := l.awaitLog(t, "vpcctl: serving /metrics and /healthz on ", 1)
	l.base = strings.TrimPrefix(line, "vpcctl: serving /metrics and /healthz on ")
	return l
}

// startLoopOn starts the loop serving on listen and returns at once.
func startLoopOn(t *testing.T, env []string, dir, listen string, args ...string) *runningLoop {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hung loop fails the test, not CI
	all := append([]string{"--state-dir", dir, "reconcile", "--metrics-listen", listen}, args...)
	l := &runningLoop{cmd: exec.CommandContext(ctx, vpcctl, all...)}
	l.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	out, err := l.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errPipe, err := l.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := l.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = l.cmd.Process.Signal(syscall.SIGTERM)
		if err := l.cmd.Wait(); err != nil {
			t.Errorf("the loop after SIGTERM: %v", err)
		}
		cancel()
	})
	l.lines = make(chan string, 1024)
	go func() {
		defer close(l.lines)
		for osc := bufio.NewScanner(out); osc.Scan(); {
			select {
			case l.lines <- osc.Text():
			default:
			}
		}
	}()
	go func() {
		for sc := bufio.NewScanner(errPipe); sc.Scan(); {
			l.mu.Lock()
			l.stderr.WriteString(sc.Text() + "\n")
			l.mu.Unlock()
		}
	}()
	return l
}

// awaitLog waits until n stderr lines hold says and returns the nth.
func (l *runningLoop) awaitLog(t *testing.T, says string, n int) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		l.mu.Lock()
		text := l.stderr.String()
		l.mu.Unlock()
		seen := 0
		for _, line := range strings.Split(text, "\n") {
			if strings.Contains(line, says) {
				if seen++; seen == n {
					return line
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d stderr lines with %q never came; stderr:\n%s", n, says, text)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (l *runningLoop) get(t *testing.T, path string) (int, string) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(l.base + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// await polls path until ok holds for its answer, up to a deadline.
func (l *runningLoop) await(t *testing.T, path, what string, ok func(code int, body string) bool) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		code, body := l.get(t, path)
		if ok(code, body) {
			return body
		}
		if time.Now().After(deadline) {
			l.mu.Lock()
			defer l.mu.Unlock()
			t.Fatalf("%s never held: last %d %q\nstderr:\n%s", what, code, body, l.stderr.String())
		}
		<-tick.C
	}
}

func promSamples(t *testing.T, name, text string) map[string]float64 {
	return promtext.Parse(t, name, []byte(text))
}

// A scrape of the loop's /metrics, read by Prometheus's parser, holds
// exactly what `vpcctl metrics` prints, the reference's awscni_* series
// among them with their meaning.
func TestMetricsListenServesWhatVpcctlMetricsPrints(t *testing.T) {
	_, env := newSim(t, "m5.large")
	dir := t.TempDir()
	l := startLoop(t, env, dir, "--every", "1h", "-o", "summary")
	if first := <-l.lines; !strings.HasPrefix(first, "reconcile: ") {
		t.Fatalf("first line %q, want the first pass's summary", first)
	}
	body := l.await(t, "/metrics", "the first pass's snapshot", func(code int, _ string) bool { return code == http.StatusOK })
	scraped := promSamples(t, "/metrics", body)
	printed := vpc(t, env, "--state-dir", dir, "metrics")
	printed.want(t, 0)
	want := promSamples(t, "vpcctl metrics", printed.stdout)
	for k, v := range want {
		if g, ok := scraped[k]; !ok || g != v {
			t.Errorf("/metrics %s = %v (present %v), vpcctl metrics %v", k, g, ok, v)
		}
	}
	if len(scraped) != len(want) {
		t.Errorf("/metrics has %d series, vpcctl metrics %d", len(scraped), len(want))
	}
	// m5.large: 3 ENIs of 10 IPv4 addresses; WARM_ENI_TARGET=1 fills the primary ENI's 9.
	for k, v := range map[string]float64{
		"awscni_eni_allocated": 1, "awscni_eni_max": 3, "awscni_ip_max": 27, "awscni_total_ip_addresses": 9,
		"awscni_assigned_ip_addresses": 0, "awscni_total_ipv4_prefixes": 0, "awscni_no_available_ip_addresses": 0,
		`awscni_ec2api_req_count{fn="AssignPrivateIpAddresses"}`: 1,
	} {
		if g, ok := scraped[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	for k, v := range scraped { // one pass so far: the cumulative count is the last pass's
		if fn, ok := strings.CutPrefix(k, `awscni_ec2api_req_count{fn="`); ok {
			if last := scraped[`vpc_cni_last_reconcile_ec2_calls{action="`+fn]; last != v {
				t.Errorf("%s = %v, the pass made %v", k, v, last)
			}
		}
	}
}

// /healthz fails once the last passes failed, and is healthy again after a
// good pass; it says one word, the cause is in the loop's log, and /metrics
// counts the EC2 errors meanwhile.
func TestMetricsListenHealthzFollowsThePasses(t *testing.T) {
	sim, env := newSim(t, "m5.large")
	dir := t.TempDir()
	// Every pass reads EC2, so an EC2 fault fails each one.
	l := startLoop(t, with(env, "VPC_CNI_EC2_RESYNC_INTERVAL=0"), dir, "--every", "20ms", "-o", "summary")
	healthy := func(code int, body string) bool { return code == http.StatusOK && body == "healthy\n" }
	if first := <-l.lines; !strings.HasPrefix(first, "reconcile: ") {
		t.Fatalf("first line %q, want the first pass's summary", first)
	}
	l.await(t, "/healthz", "healthy after the first pass", healthy)

	sim.FailNext("*", "UnauthorizedOperation", 1<<30)
	body := l.await(t, "/healthz", "unhealthy while EC2 refuses", func(code int, _ string) bool {
		return code == http.StatusServiceUnavailable
	})
	if body != "unhealthy\n" {
		t.Errorf("/healthz says %q, want only \"unhealthy\": it answers anyone who reaches the node", body)
	}
	if line := l.awaitLog(t, "vpcctl: reconcile: ", 1); !strings.Contains(line, "DescribeNetworkInterfaces") {
		t.Errorf("the log's cause %q does not name the call", line)
	}
	// The snapshot after each pass has the failed passes' EC2 errors.
	key := `awscni_aws_api_error_count{api="DescribeNetworkInterfaces",error="UnauthorizedOperation"}`
	l.await(t, "/metrics", "the EC2 errors counted", func(_ int, text string) bool {
		return promSamples(t, "/metrics", text)[key] >= metrics.UnhealthyAfter
	})

	sim.FailNext("*", "", 0)
	l.await(t, "/healthz", "healthy again after a good pass", healthy)
}

// A scrape never opens the state file: with the file held exclusively (as
// a pod ADD holds it), scrapes are answered with the loop's snapshot, and
// /healthz too.
func TestMetricsScrapeDoesNotOpenTheState(t *testing.T) {
	_, env := newSim(t, "m5.large")
	dir := t.TempDir()
	l := startLoop(t, env, dir, "--every", "1h", "-o", "summary")
	if first := <-l.lines; !strings.HasPrefix(first, "reconcile: ") {
		t.Fatalf("first line %q, want the first pass's summary", first)
	}
	before := l.await(t, "/metrics", "the first pass's snapshot", func(code int, _ string) bool { return code == http.StatusOK })
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = st.Update(func(*store.Tx) error {
		for range 5 {
			if code, body := l.get(t, "/metrics"); code != http.StatusOK || body != before {
				t.Errorf("/metrics with the state held: %d, %d bytes (want 200, the %d bytes before)\n%s", code, len(body), len(before), body)
			}
			if code, body := l.get(t, "/healthz"); code != http.StatusOK || body != "healthy\n" {
				t.Errorf("/healthz with the state held: %d %q", code, body)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A port another program holds stops neither the loop nor its passes: the
// bind is reported (log and event) and retried, and once the port is free
// the loop serves there.
func TestMetricsListenRetriesATakenPort(t *testing.T) {
	sim, env := newSim(t, "m5.large")
	dir := t.TempDir()
	vpc(t, env, "--state-dir", dir, "reconcile").want(t, 0)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	sim.FailNext("*", "UnauthorizedOperation", 1<<30) // every pass fails, and says so on stderr
	l := startLoopOn(t, with(env, "VPC_CNI_EC2_RESYNC_INTERVAL=0"), dir, taken.Addr().String(), "--every", "20ms", "-o", "summary")
	l.awaitLog(t, "address already in use; /metrics and /healthz are not served; retrying in", 1)
	l.awaitLog(t, "vpcctl: reconcile: ", 3)
	events := vpc(t, env, "--state-dir", dir, "events")
	events.want(t, 0, "metrics-listen-failed", taken.Addr().String())

	sim.FailNext("*", "", 0)
	_ = taken.Close()
	line := l.awaitLog(t, "vpcctl: serving /metrics and /healthz on ", 1)
	l.base = strings.TrimPrefix(line, "vpcctl: serving /metrics and /healthz on ")
	l.await(t, "/healthz", "healthy once bound and a pass succeeded", func(code int, body string) bool {
		return code == http.StatusOK && body == "healthy\n"
	})
}

// --metrics-listen belongs to the loop and takes IP:PORT; DISABLE_METRICS
// (the reference's switch) turns it off, and a bad value of either names
// itself with exit 2.
func TestMetricsListenNeedsTheLoop(t *testing.T) {
	_, env := newSim(t, "t3.small")
	vpc(t, env, "--state-dir", t.TempDir(), "reconcile", "--metrics-listen", "127.0.0.1:0").want(t, 2, "--metrics-listen", "--every")
	for _, bad := range []string{"256.0.0.1:1", "127.0.0.1:x", "localhost:61678", "127.0.0.1"} {
		vpc(t, env, "--state-dir", t.TempDir(), "reconcile", "--every", "1h", "--metrics-listen", bad).want(t, 2, "--metrics-listen "+bad)
	}
	vpc(t, with(env, "DISABLE_METRICS=maybe"), "--state-dir", t.TempDir(), "reconcile", "--every", "1h", "--metrics-listen", "127.0.0.1:0").
		want(t, 2, `DISABLE_METRICS="maybe"`)
}

// --health-listen belongs to the loop too, and a bad address names itself.
func TestHealthListenNeedsTheLoop(t *testing.T) {
	_, env := newSim(t, "t3.small")
	vpc(t, env, "--state-dir", t.TempDir(), "reconcile", "--health-listen", "127.0.0.1:0").want(t, 2, "--health-listen", "--every")
	vpc(t, env, "--state-dir", t.TempDir(), "reconcile", "--every", "1h", "--health-listen", "localhost:61680").
		want(t, 2, "--health-listen localhost:61680")
}

// With DISABLE_METRICS=true the loop runs its passes and serves nothing.
func TestDisableMetricsTurnsTheListenerOff(t *testing.T) {
	_, env := newSim(t, "m5.large")
	l := startLoopOn(t, with(env, "DISABLE_METRICS=true"), t.TempDir(), "127.0.0.1:0", "--every", "1h", "-o", "summary")
	l.awaitLog(t, "DISABLE_METRICS=true: /metrics and /healthz are not served", 1)
	if first := <-l.lines; !strings.HasPrefix(first, "reconcile: ") {
		t.Fatalf("first line %q, want the first pass's summary", first)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if strings.Contains(l.stderr.String(), "serving /metrics") {
		t.Errorf("the loop serves with DISABLE_METRICS=true:\n%s", l.stderr.String())
	}
}
