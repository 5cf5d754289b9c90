package npa

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
)

// DialTimeout is aws-cni's bound on reaching the agent (npAgentConnTimeout).
const DialTimeout = 2 * time.Second

// Client calls the agent's NPBackend on its unix socket.
type Client struct {
	Socket string // AgentSocket unless a test or the conflist says otherwise
	// Wait bounds how long a socket that is absent or refuses (the agent
	// starting, or restarting with its DaemonSet) is tried again; at least
	// DialTimeout, aws-cni's blocking dial. An agent that answers is never
	// asked twice.
	Wait time.Duration
	// OnWait, if set, is told once that the agent is away and the call waits.
	OnWait func(error)
}

// ErrRefused is the agent's Success=false: it answered, and did not program
// the pod.
var ErrRefused = errors.New("the agent answered Success=false")

// Enforce asks the agent to attach its programs to the pod's host veth
// (EnforceNpToPod), within ctx's deadline.
func (c Client) Enforce(ctx context.Context, r EnforceRequest) error {
	return c.call(ctx, pathEnforce, r.marshal())
}

// Delete tells the agent the pod is gone (DeletePodNp).
func (c Client) Delete(ctx context.Context, r DeleteRequest) error {
	return c.call(ctx, pathDelete, r.marshal())
}

// call runs one unary call on a connection of its own (the plugin makes
// one call per process) and reads the reply's Success.
func (c Client) call(ctx context.Context, path string, msg []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://localhost"+path, bytes.NewReader(frame(msg)))
	if err != nil {
		return err
	}
	conn, err := c.connect(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	t := &http.Transport{DialContext: handOver(conn), Protocols: h2c()}
	defer t.CloseIdleConnections()
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Te", "trailers")
	if d, ok := ctx.Deadline(); ok {
		// The agent's side of the deadline: it stops work the plugin no longer waits for.
		req.Header.Set("Grpc-Timeout", strconv.FormatInt(max(time.Until(d).Milliseconds(), 1), 10)+"m")
	}
	resp, err := t.RoundTrip(req)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer resp.Body.Close()
	reply, err := readMessage(io.LimitReader(resp.Body, maxMessage+5))
	if err == nil {
		_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, maxMessage)) // the trailers come after the body
	}
	if err := callStatus(resp, err); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	ok, err := success(reply)
	if err == nil && !ok {
		err = ErrRefused
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// handOver gives the transport the connection connect made, once.
func handOver(conn net.Conn) func(context.Context, string, string) (net.Conn, error) {
	var used bool
	return func(context.Context, string, string) (net.Conn, error) {
		if used {
			return nil, errors.New("one call per connection")
		}
		used = true
		return conn, nil
	}
}

// callStatus is the call's gRPC status (trailers, or the headers of a
// trailers-only answer) as an error; readErr counts only when it is OK.
func callStatus(resp *http.Response, readErr error) error {
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP status %d", resp.StatusCode)
	}
	code := resp.Trailer.Get("Grpc-Status")
	msg := resp.Trailer.Get("Grpc-Message")
	if code == "" {
		code, msg = resp.Header.Get("Grpc-Status"), resp.Header.Get("Grpc-Message")
	}
	switch {
	case code == "":
		return errors.New("no grpc-status in the answer")
	case code != strconv.Itoa(codeOK):
		return fmt.Errorf("gRPC status %s: %s", code, decodeMessage(msg))
	}
	return readErr
}

// h2c is gRPC's transport without TLS: HTTP/2 with prior knowledge, which
// net/http speaks itself (no TLS, no HTTP/1 upgrade).
func h2c() *http.Protocols {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	return &p
}
