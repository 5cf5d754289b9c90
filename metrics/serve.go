package metrics

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// UnhealthyAfter is how many passes in a row must fail before /healthz
// fails: one failed pass (a throttled EC2, a slow IMDS) is routine.
const UnhealthyAfter = 3

// Health follows the outcome of a loop's passes for /healthz.
type Health struct {
	mu      sync.Mutex
	passes  int
	failed  int // in a row
	lastErr string
}

// Record notes one pass's outcome; a good pass makes the node healthy again.
func (h *Health) Record(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.passes++
	if err == nil {
		h.failed, h.lastErr = 0, ""
		return
	}
	h.failed++
	h.lastErr = err.Error()
}

// Status says whether the node is healthy and why.
func (h *Health) Status() (bool, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.failed >= UnhealthyAfter:
		return false, fmt.Sprintf("unhealthy: the last %d reconcile passes failed; the last: %s", h.failed, h.lastErr)
	case h.passes == 0:
		return true, "ok: no pass has finished yet"
	case h.failed > 0:
		return true, fmt.Sprintf("ok: %d %s in a row failed, unhealthy from %d; the last: %s", h.failed, map[bool]string{true: "pass", false: "passes"}[h.failed == 1],
			UnhealthyAfter, h.lastErr)
	}
	return true, "ok: the last reconcile pass succeeded"
}

// Handler serves /metrics, gathered afresh for every scrape (the caller's
// gather opens the state briefly; nothing is held between scrapes), and
// /healthz from h.
func Handler(gather func() (Input, error), h *Health) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		var b bytes.Buffer
		in, err := gather()
		if err == nil {
			err = Render(&b, in)
		}
		if err != nil {
			http.Error(w, "metrics: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = w.Write(b.Bytes())
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		ok, why := h.Status()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		fmt.Fprintln(w, why)
	})
	return mux
}

// Serve answers on ln until ctx ends, with the reference's 5 s timeouts.
func Serve(ctx context.Context, ln net.Listener, handler http.Handler) error {
	srv := &http.Server{Handler: handler, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second,
		ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
