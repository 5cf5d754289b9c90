package metrics

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The reference's series carry the figures with aws-node's meaning.
func TestRenderHasTheReferenceSeries(t *testing.T) {
	in := sampleInput()
	in.Figures.Total = 6
	in.Reference = Reference{IPMax: 27, Prefixes: 2, NoAddress: 4, EC2Calls: map[string]int64{"DescribeNetworkInterfaces": 5},
		EC2Errors: []APIError{{API: "DescribeNetworkInterfaces", Code: "UnauthorizedOperation", N: 3}}}
	var b strings.Builder
	if err := Render(&b, in); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"awscni_eni_allocated 2", "awscni_eni_max 3", "awscni_ip_max 27", "awscni_total_ip_addresses 6",
		"awscni_assigned_ip_addresses 2", "awscni_total_ipv4_prefixes 2", "awscni_no_available_ip_addresses 4",
		`awscni_ec2api_req_count{fn="DescribeNetworkInterfaces"} 5`,
		`awscni_aws_api_error_count{api="DescribeNetworkInterfaces",error="UnauthorizedOperation"} 3`,
		"# TYPE awscni_ec2api_req_count counter",
	} {
		if !strings.Contains(b.String(), want+"\n") {
			t.Errorf("missing %q in\n%s", want, b.String())
		}
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// /healthz is one word and its code, failing only after UnhealthyAfter
// failed passes in a row; the error, which names the node's role, account
// and paths, never reaches the answer.
func TestHealthzSaysOneWordAndLeaksNothing(t *testing.T) {
	h := &Health{}
	srv := httptest.NewServer(Handler(&Snapshot{}, h))
	defer srv.Close()
	secret := errors.New("ec2:DescribeNetworkInterfaces: User: arn:aws:sts::111122223333:assumed-role/node-role/i-0abc " +
		"is not authorized; state /var/lib/vpc-cni/state.db")
	if code, body := get(t, srv.URL+"/healthz"); code != 200 || body != "healthy\n" {
		t.Errorf("before any pass: %d %q, want 200 \"healthy\\n\"", code, body)
	}
	for i := 1; i <= UnhealthyAfter; i++ {
		h.Record(secret)
		code, body := get(t, srv.URL+"/healthz")
		want, wantCode := "healthy\n", 200
		if i == UnhealthyAfter {
			want, wantCode = "unhealthy\n", http.StatusServiceUnavailable
		}
		if code != wantCode || body != want {
			t.Errorf("after %d failed passes: %d %q, want %d %q", i, code, body, wantCode, want)
		}
	}
	h.Record(nil)
	if code, body := get(t, srv.URL+"/healthz"); code != 200 || body != "healthy\n" {
		t.Errorf("after a good pass: %d %q", code, body)
	}
}

// /metrics is the snapshot last taken, byte for byte, and says it has none
// before the first.
func TestMetricsServesTheSnapshot(t *testing.T) {
	snap := &Snapshot{}
	srv := httptest.NewServer(Handler(snap, &Health{}))
	defer srv.Close()
	if code, body := get(t, srv.URL+"/metrics"); code != http.StatusServiceUnavailable || !strings.Contains(body, "first pass") {
		t.Errorf("before a snapshot: %d %q", code, body)
	}
	for _, enis := range []int{2, 3} {
		in := sampleInput()
		in.Figures.ENIs = enis
		if err := snap.Take(in); err != nil {
			t.Fatal(err)
		}
		var want strings.Builder
		if err := Render(&want, in); err != nil {
			t.Fatal(err)
		}
		if code, body := get(t, srv.URL+"/metrics"); code != 200 || body != want.String() {
			t.Errorf("after a snapshot of %d ENIs: %d\n%s", enis, code, body)
		}
	}
}

// Beyond MaxConns the server accepts nothing until a connection closes: a
// request on one more connection is not answered while MaxConns requests
// are held in the handler, and is answered once one of them closes.
func TestServeCapsConnections(t *testing.T) {
	var inside atomic.Int32
	release := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			inside.Add(1)
			<-release
		}
		fmt.Fprintln(w, "ok")
	})
	base, _ := serveOn(t, h)
	held := make([]net.Conn, MaxConns)
	for i := range held {
		held[i] = request(t, base, "/hold")
	}
	waitFor(t, "every held request in the handler", func() bool { return inside.Load() == MaxConns })

	extra := request(t, base, "/now")
	_ = extra.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if n, err := extra.Read(make([]byte, 1)); n > 0 || err == nil {
		t.Fatalf("connection %d was answered while %d were held", MaxConns+1, MaxConns)
	}
	close(release)
	r := bufio.NewReader(held[0])
	if resp, err := http.ReadResponse(r, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("a held request after release: %v", err)
	}
	_ = held[0].Close()
	_ = extra.SetReadDeadline(time.Now().Add(30 * time.Second))
	if resp, err := http.ReadResponse(bufio.NewReader(extra), nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("connection %d after one closed: %v", MaxConns+1, err)
	}
}

// serveOn runs Serve on a loopback port until the test ends.
func serveOn(t *testing.T, h http.Handler) (string, net.Listener) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, h) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String(), ln
}

// request opens a connection and sends one GET on it; the test closes it.
func request(t *testing.T, addr, path string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path); err != nil {
		t.Fatal(err)
	}
	return c
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: never happened", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The pace gives a burst at once, then one turn per interval, and never
// asks a request to wait beyond maxWait, however many gave up their turn.
func TestPaceSpacesAnswers(t *testing.T) {
	const every = 50 * time.Millisecond
	p := newPace(every, 3, 200*time.Millisecond)
	now := time.Unix(1000, 0)
	var got []time.Duration
	for range 8 {
		got = append(got, p.reserve(now))
	}
	want := []time.Duration{0, 0, 0, 50, 100, 150, 200, 200}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("waits %v, want %v ms", got, want)
		}
	}
	if w := p.reserve(now.Add(time.Hour)); w != 0 {
		t.Errorf("after an idle hour: wait %s, want 0", w)
	}
}

// A port another program holds is reported and tried again; once it is
// free the server binds it and answers.
func TestServerRetriesATakenPort(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	fails, bound := 0, ""
	srv := &Server{Addr: taken.Addr().String(), Handler: Handler(&Snapshot{}, &Health{}), FirstRetry: 5 * time.Millisecond,
		MaxRetry:  20 * time.Millisecond,
		Listening: func(a net.Addr) { mu.Lock(); bound = a.String(); mu.Unlock() },
		Failed: func(err error, _ time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			if !strings.Contains(err.Error(), "address already in use") {
				t.Errorf("bind error %v", err)
			}
			fails++
		}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	waitFor(t, "three failed binds", func() bool { mu.Lock(); defer mu.Unlock(); return fails >= 3 })
	_ = taken.Close()
	waitFor(t, "the bind once the port is free", func() bool { mu.Lock(); defer mu.Unlock(); return bound != "" })
	if code, body := get(t, "http://"+srv.Addr+"/healthz"); code != 200 || body != "healthy\n" {
		t.Errorf("/healthz after the retry: %d %q", code, body)
	}
}

// A listener of /healthz alone answers while every slot of the metrics
// port is held by connections that never send a request.
func TestHealthAnswersWhileTheMetricsPortIsFull(t *testing.T) {
	h := &Health{}
	metricsAt, _ := serveOn(t, Handler(&Snapshot{}, h))
	for range MaxConns + 50 {
		c, err := net.Dial("tcp", metricsAt)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeWithin(ctx, ln, HealthHandler(h), HealthLimits) }()
	t.Cleanup(func() { cancel(); <-done })
	if code, body := get(t, "http://"+ln.Addr().String()+"/healthz"); code != 200 || body != "healthy\n" {
		t.Errorf("/healthz on its own listener: %d %q", code, body)
	}
	if code, _ := get(t, "http://"+ln.Addr().String()+"/metrics"); code != http.StatusNotFound {
		t.Errorf("/metrics on the health listener: %d, want 404", code)
	}
}
