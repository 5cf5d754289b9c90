package npa

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Answer computes the reply to GetNetworkPolicyConfigs when the agent asks
// (the node's identity may be learnt after the server starts).
type Answer func() (ConfigReply, error)

// sockTempPattern names the private directories Listen binds in.
const sockTempPattern = ".vpc-cni-sock-*"

// Listen makes a root-only socket at path: the directory is created 0750
// if missing, the socket is bound in a private directory beside it, made
// 0600 and renamed into place, so no other user can connect even briefly.
// A stale socket left by a killed process (or aws-node's) is replaced, and
// so is a private directory a killed process left.
func Listen(path string) (net.Listener, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, sockTempPattern))
	for _, l := range leftovers { // a process killed between bind and rename
		os.RemoveAll(l)
	}
	tmp, err := os.MkdirTemp(dir, sockTempPattern)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	bound := filepath.Join(tmp, "s")
	ln, err := net.Listen("unix", bound)
	if err != nil {
		return nil, err
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false) // the name moves; Serve removes the final one
	err = os.Chmod(bound, 0o600)
	if err == nil {
		err = os.Rename(bound, path)
	}
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	return ln, nil
}

// ServeConfig answers GetNetworkPolicyConfigs on ln until ctx ends, then
// closes ln and removes the socket at path.
func ServeConfig(ctx context.Context, ln net.Listener, path string, answer Answer) error {
	srv := &http.Server{Handler: configHandler(answer), Protocols: h2c(), ReadHeaderTimeout: 10 * time.Second}
	defer os.Remove(path)
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// configHandler serves the one method; any other is Unimplemented, as
// grpc-go answers.
func configHandler(answer Answer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasPrefix(r.Header.Get("Content-Type"), contentType) {
			http.Error(w, "gRPC only", http.StatusUnsupportedMediaType)
			return
		}
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Trailer", "Grpc-Status, Grpc-Message")
		if r.URL.Path != pathConfig {
			finish(w, codeUnimplemented, "method "+r.URL.Path+" not implemented")
			return
		}
		if _, err := readMessage(r.Body); err != nil {
			finish(w, codeInvalidArg, err.Error())
			return
		}
		reply, err := answer()
		if err != nil {
			finish(w, codeUnavailable, err.Error())
			return
		}
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(frame(reply.marshal()))
		finish(w, codeOK, "")
	})
}

// finish sets the status trailers (declared before the headers went out).
func finish(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Grpc-Status", fmt.Sprint(code))
	if msg != "" {
		w.Header().Set("Grpc-Message", encodeMessage(msg))
	}
}

// ErrNoNode is an Answer's error before the node's identity is known (no
// first pass yet): the agent retries.
var ErrNoNode = errors.New("the node's identity is not known yet (no reconcile pass has recorded it)")
