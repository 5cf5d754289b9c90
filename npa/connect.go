package npa

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"
)

// Pauses between tries while the agent is away: short first (the agent
// may be binding now), then no busier than twice a second.
const (
	firstPause = 20 * time.Millisecond
	maxPause   = 500 * time.Millisecond
)

// connect reaches the socket, trying again while the agent is away, for up
// to Wait (at least DialTimeout) and within ctx.
func (c Client) connect(ctx context.Context) (net.Conn, error) {
	wait := max(c.Wait, DialTimeout)
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	start := time.Now()
	d := net.Dialer{Timeout: DialTimeout}
	for pause := firstPause; ; pause = min(2*pause, maxPause) {
		conn, err := d.DialContext(ctx, "unix", c.Socket)
		if err == nil || !away(err) {
			return conn, err
		}
		if pause == firstPause && c.OnWait != nil {
			c.OnWait(err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("no agent answered on the socket within %s: %w", time.Since(start).Round(10*time.Millisecond), err)
		case <-time.After(pause):
		}
	}
}

// away: nothing listens on the socket yet. The agent removes its old socket
// and binds a new one when it starts, so a restart shows as no file, a file
// that refuses, or a backlog still full.
func away(err error) bool {
	return errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EAGAIN)
}
