package metrics

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// limitListener accepts at most n connections at a time: Accept waits for
// one to close, so the rest wait in the kernel's queue. (The shape of
// golang.org/x/net/netutil's, which the binary does not otherwise link.)
func limitListener(ln net.Listener, n int) net.Listener {
	return &limited{Listener: ln, slots: make(chan struct{}, n), done: make(chan struct{})}
}

type limited struct {
	net.Listener
	slots     chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func (l *limited) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &slotConn{Conn: c, free: func() { <-l.slots }}, nil
}

func (l *limited) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

// slotConn gives its slot back when closed, once.
type slotConn struct {
	net.Conn
	once sync.Once
	free func()
}

func (c *slotConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.free)
	return err
}

// pace spaces answers every interval, after a burst (a generic cell rate
// algorithm): a request beyond waits for its turn, and never more than
// maxWait, so a flood costs the node a fixed number of answers a second
// while its clients sit blocked on their sockets.
type pace struct {
	mu      sync.Mutex
	tat     time.Time // when the next answer would be due with no burst left
	every   time.Duration
	slack   time.Duration // the burst: (burst-1) intervals
	maxWait time.Duration
}

func newPace(every time.Duration, burst int, maxWait time.Duration) *pace {
	return &pace{every: every, slack: time.Duration(burst-1) * every, maxWait: maxWait}
}

// reserve takes the next turn and says how long to wait for it.
func (p *pace) reserve(now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	tat := p.tat
	if tat.Before(now) {
		tat = now
	}
	wait := min(max(tat.Sub(now)-p.slack, 0), p.maxWait)
	// Turns given up (a client that left) do not push the queue past maxWait.
	if limit := now.Add(p.slack + p.maxWait); tat.After(limit) {
		tat = limit
	}
	p.tat = tat.Add(p.every)
	return wait
}

func (p *pace) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if wait := p.reserve(time.Now()); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}
