package cloud

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"vpc-cni/sim/ec2sim"
)

// TestAnswerOvertakingTheRequestWrite: an answer that reaches the SDK before
// net/http's writeLoop has finished with the request body (a loopback
// emulator on a busy machine) is read whole. The SDK closes the request body
// as soon as it has the response headers; the writeLoop's last read of it
// must take that as the end, not fail and close the connection under the
// deserializer (readOnlyBodies). The connections here hold every request
// body's write until the response is being read past the transport's first
// buffer, which makes that order certain.
func TestAnswerOvertakingTheRequestWrite(t *testing.T) {
	sim := startSim(t, ec2sim.Config{InstanceType: "m4.4xlarge"})
	ctx := testCtx(t)
	st := sim.State()
	fillENIs(ctx, t, newClient(t, Options{}), st, 4)

	c := newClient(t, Options{MaxAttempts: 1})
	c.transport = func(tr *http.Transport) {
		dial := tr.DialContext
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &overtakingConn{Conn: conn}, nil
		}
	}
	for i := range 20 {
		enis, err := c.InstanceENIs(ctx, st.InstanceID)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if len(enis) != 4 {
			t.Fatalf("call %d: %d ENIs, want 4", i, len(enis))
		}
	}
}

// fillENIs gives the instance n ENIs with every address they can hold, for an
// answer several times the transport's 4 KiB read buffer.
func fillENIs(ctx context.Context, t *testing.T, c *Client, st ec2sim.State, n int) {
	t.Helper()
	if _, err := c.AssignAddresses(ctx, st.ENIs[0].ID, 29, false); err != nil {
		t.Fatal(err)
	}
	for dev := 1; dev < n; dev++ {
		e, err := c.CreateENI(ctx, CreateENIRequest{SubnetID: st.SubnetID, InstanceID: st.InstanceID, Count: 29})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.AttachENI(ctx, e.ID, st.InstanceID, dev); err != nil {
			t.Fatal(err)
		}
	}
}

// overtakingConn returns from writing a request body only once the response
// is read beyond what the transport's first read of it took, that is by the
// SDK's deserializer, after the SDK has closed the request body.
type overtakingConn struct {
	net.Conn
	mu       sync.Mutex
	answered bool          // a read returned data since the body was written
	reading  chan struct{} // closed by the next read after that
}

func (c *overtakingConn) Write(p []byte) (int, error) {
	if bytes.HasPrefix(p, []byte("POST ")) { // the request line and headers
		return c.Conn.Write(p)
	}
	reading := make(chan struct{})
	c.mu.Lock()
	c.answered, c.reading = false, reading
	c.mu.Unlock()
	n, err := c.Conn.Write(p)
	select {
	case <-reading:
	case <-time.After(5 * time.Second): // an answer that fits in one read: nothing to hold back for
	}
	return n, err
}

func (c *overtakingConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	if c.answered && c.reading != nil {
		close(c.reading)
		c.reading = nil
	}
	c.mu.Unlock()
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	c.answered = c.answered || (n > 0 && c.reading != nil)
	c.mu.Unlock()
	return n, err
}
