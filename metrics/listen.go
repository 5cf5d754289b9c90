package metrics

import (
	"context"
	"net"
	"net/http"
	"time"
)

// Server binds Addr and serves Handler there until its context ends. A
// bind that fails (a port another program holds, an address not yet on the
// node) is told to Failed and tried again after a back-off, doubling from
// FirstRetry to MaxRetry: the loop's passes go on meanwhile, and nothing
// outside can stop them by taking the port first.
type Server struct {
	Addr      string
	Handler   http.Handler
	Limits    Limits                               // zero: MetricsLimits
	Listening func(addr net.Addr)                  // bound; serving from now on
	Failed    func(err error, retry time.Duration) // not serving; the next try is in retry
	// The back-off; zero means 1 s and 1 min.
	FirstRetry, MaxRetry time.Duration
}

// Run serves until ctx ends.
func (s *Server) Run(ctx context.Context) {
	first, most := s.FirstRetry, s.MaxRetry
	if first <= 0 {
		first = time.Second
	}
	if most < first {
		most = max(time.Minute, first)
	}
	delay := first
	for ctx.Err() == nil {
		ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", s.Addr)
		if err == nil {
			s.Listening(ln.Addr())
			delay = first
			if err = ServeWithin(ctx, ln, s.Handler, s.limits()); err == nil {
				return
			}
		}
		if ctx.Err() != nil {
			return
		}
		s.Failed(err, delay)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		delay = min(2*delay, most)
	}
}

func (s *Server) limits() Limits {
	if s.Limits == (Limits{}) {
		return MetricsLimits
	}
	return s.Limits
}
