package commands

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"vpc-cni/internal/promtext"
	"vpc-cni/metrics"
)

// loop is a running `vpcctl reconcile --every ... --metrics-listen`.
type loop struct {
	cmd    *exec.Cmd
	base   string      // http://host:port
	lines  chan string // stdout's lines (beyond 1024 unread, dropped)
	mu     sync.Mutex
	stderr bytes.Buffer // after the listener's line, for failure messages
}

// startLoop starts the loop on an ephemeral port and returns once the
// listener's line is on stderr; SIGTERM and a wait end it at cleanup.
func startLoop(t *testing.T, env []string, dir string, args ...string) *loop {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hung loop fails the test, not CI
	all := append([]string{"--state-dir", dir, "reconcile", "--metrics-listen", "127.0.0.1:0"}, args...)
	l := &loop{cmd: exec.CommandContext(ctx, vpcctl, all...)}
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
	sc := bufio.NewScanner(errPipe)
	for sc.Scan() {
		if addr, ok := strings.CutPrefix(sc.Text(), "vpcctl: serving /metrics and /healthz on "); ok {
			l.base = addr
			break
		}
		t.Logf("stderr: %s", sc.Text())
	}
	if l.base == "" {
		t.Fatal("the loop ended without the listener's line on stderr")
	}
	go func() {
		for sc.Scan() {
			l.mu.Lock()
			l.stderr.WriteString(sc.Text() + "\n")
			l.mu.Unlock()
		}
	}()
	return l
}

func (l *loop) get(t *testing.T, path string) (int, string) {
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
func (l *loop) await(t *testing.T, path, what string, ok func(code int, body string) bool) string {
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
	code, body := l.get(t, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", code, body)
	}
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

// /healthz fails once the last passes failed, says why, and is healthy
// again after a good pass; /metrics counts the EC2 errors meanwhile.
func TestMetricsListenHealthzFollowsThePasses(t *testing.T) {
	sim, env := newSim(t, "m5.large")
	dir := t.TempDir()
	// Every pass reads EC2, so an EC2 fault fails each one.
	l := startLoop(t, with(env, "VPC_CNI_EC2_RESYNC_INTERVAL=0"), dir, "--every", "20ms", "-o", "summary")
	healthy := func(code int, body string) bool {
		return code == http.StatusOK && strings.Contains(body, "the last reconcile pass succeeded")
	}
	l.await(t, "/healthz", "healthy after the first pass", healthy)

	sim.FailNext("*", "UnauthorizedOperation", 1<<30)
	body := l.await(t, "/healthz", "unhealthy while EC2 refuses", func(code int, _ string) bool {
		return code == http.StatusServiceUnavailable
	})
	for _, says := range []string{"the last 3 reconcile passes failed", "DescribeNetworkInterfaces"} {
		if !strings.Contains(body, says) {
			t.Errorf("/healthz says %q, want it to name %q", body, says)
		}
	}
	_, text := l.get(t, "/metrics")
	key := `awscni_aws_api_error_count{api="DescribeNetworkInterfaces",error="UnauthorizedOperation"}`
	if n := promSamples(t, "/metrics", text)[key]; n < metrics.UnhealthyAfter {
		t.Errorf("%s = %v, want at least %d after the failed passes", key, n, metrics.UnhealthyAfter)
	}

	sim.FailNext("*", "", 0)
	l.await(t, "/healthz", "healthy again after a good pass", healthy)
}

// --metrics-listen belongs to the loop; a bad address names itself.
func TestMetricsListenNeedsTheLoop(t *testing.T) {
	_, env := newSim(t, "t3.small")
	vpc(t, env, "--state-dir", t.TempDir(), "reconcile", "--metrics-listen", "127.0.0.1:0").want(t, 2, "--metrics-listen", "--every")
	vpc(t, env, "--state-dir", t.TempDir(), "reconcile", "--every", "1h", "--metrics-listen", "256.0.0.1:x").want(t, 1, "--metrics-listen 256.0.0.1:x")
}
