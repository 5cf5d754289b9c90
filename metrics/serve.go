package metrics

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// UnhealthyAfter is how many passes in a row must fail before /healthz
// fails: one failed pass (a throttled EC2, a slow IMDS) is routine.
const UnhealthyAfter = 3

// Health follows the outcome of a loop's passes for /healthz. It keeps no
// error text: /healthz answers anyone who reaches the port, and a pass's
// error names role ARNs, account IDs and paths. The cause is in the loop's
// log, `vpcctl events` and `vpcctl doctor`.
type Health struct {
	mu     sync.Mutex
	failed int // in a row
}

// Record notes one pass's outcome; a good pass makes the node healthy again.
func (h *Health) Record(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == nil {
		h.failed = 0
		return
	}
	h.failed++
}

// Healthy is false once UnhealthyAfter passes in a row have failed.
func (h *Health) Healthy() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.failed < UnhealthyAfter
}

// Snapshot is the /metrics text the loop rendered last: scrapes read it and
// never the state file, whose lock every pod ADD needs exclusively.
type Snapshot struct {
	text atomic.Pointer[[]byte]
}

// Take renders in and makes it what scrapes get from now on.
func (s *Snapshot) Take(in Input) error {
	var b bytes.Buffer
	if err := Render(&b, in); err != nil {
		return err
	}
	text := b.Bytes()
	s.text.Store(&text)
	return nil
}

// Text is the last text taken, nil before the first.
func (s *Snapshot) Text() []byte {
	if p := s.text.Load(); p != nil {
		return *p
	}
	return nil
}

// Handler serves /metrics from snap and /healthz from h: one word and its
// status code, nothing a stranger could learn the node's account from.
func Handler(snap *Snapshot, h *Health) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		text := snap.Text()
		if text == nil {
			http.Error(w, "no metrics yet: the loop takes them after its first pass", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = w.Write(text)
	})
	mux.Handle("GET /healthz", HealthHandler(h))
	return mux
}

// HealthHandler answers /healthz alone from h.
func HealthHandler(h *Health) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !h.Healthy() {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "unhealthy")
			return
		}
		fmt.Fprintln(w, "healthy")
	})
	return mux
}

// The server's bounds. The port answers whoever reaches the node, so what
// it may cost the node is fixed here: MaxConns connections (more wait in the
// kernel's accept queue, costing the loop no fd, goroutine or CPU), at most
// ScrapesPerSecond answers a second with a burst of ScrapeBurst (a request
// beyond waits for its turn, up to MaxWait), one answer per connection,
// small headers, and timeouts that close slow connections.
//
// A connection that has not sent its request headers within HeaderTimeout
// is closed: Prometheus and the kubelet send theirs as soon as they
// connect, and idle connections would otherwise hold the slots.
const (
	MaxConns         = 32
	HealthConns      = 4
	ScrapesPerSecond = 20
	ScrapeBurst      = 20
	MaxWait          = 2 * time.Second
	MaxHeaderBytes   = 4 << 10
	HeaderTimeout    = 2 * time.Second
	readTimeout      = 5 * time.Second
	writeTimeout     = 10 * time.Second // above MaxWait: a paced answer is still written
)

// Limits bound one listener.
type Limits struct {
	Conns int  // connections served at a time; more wait in the kernel's queue
	Paced bool // answers spaced at ScrapesPerSecond after ScrapeBurst
}

var (
	// MetricsLimits bound the port that serves /metrics.
	MetricsLimits = Limits{Conns: MaxConns, Paced: true}
	// HealthLimits bound a listener of /healthz alone: a word costs no
	// pacing, and its few slots are the kubelet's, not the scrapers'.
	HealthLimits = Limits{Conns: HealthConns}
)

// Serve answers on ln, within MetricsLimits, until ctx ends.
func Serve(ctx context.Context, ln net.Listener, handler http.Handler) error {
	return ServeWithin(ctx, ln, handler, MetricsLimits)
}

// ServeWithin answers on ln, within lim and the bounds above, until ctx
// ends.
func ServeWithin(ctx context.Context, ln net.Listener, handler http.Handler, lim Limits) error {
	if lim.Paced {
		handler = newPace(time.Second/ScrapesPerSecond, ScrapeBurst, MaxWait).wrap(handler)
	}
	srv := &http.Server{Handler: handler, ReadTimeout: readTimeout, ReadHeaderTimeout: HeaderTimeout,
		WriteTimeout: writeTimeout, MaxHeaderBytes: MaxHeaderBytes}
	// One answer per connection: a slot goes to the next connection in the
	// kernel's queue, in turn, rather than to whoever holds a keep-alive.
	srv.SetKeepAlivesEnabled(false)
	ctx, cancel := context.WithCancel(ctx) // the shutdown below ends with Serve, whatever ends it
	defer cancel()
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	if err := srv.Serve(limitListener(ln, lim.Conns)); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
