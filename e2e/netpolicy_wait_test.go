package e2e

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/types"
)

// waitLine is what the plugin logs when it finds the agent away.
const waitLine = "waiting for the network policy agent"

// An agent restarting with its DaemonSet (its socket gone, or left behind
// and refusing) is waited for: the ADD started meanwhile succeeds once the
// agent is back, and the agent programs the pod.
func TestPrivilegedNetworkPolicyADDWaitsForARestartingAgent(t *testing.T) {
	for _, tc := range []struct {
		name  string
		leave func(t *testing.T, sock string)
	}{
		{"socket gone", func(*testing.T, string) {}},
		{"socket refuses", leaveDeadSocket},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := policyWorld(t, "strict")
			sock := filepath.Join(t.TempDir(), "npa.sock")
			tc.leave(t, sock)
			rt := w.runtime(conflist(w.conf(map[string]any{"policyAgentSocket": sock})))
			p := w.newPod("web-7d9f")
			done := make(chan error, 1)
			go func() { _, err := rt.add(p, nil); done <- err }()
			waitLogged(t, w, done)
			agent := startAgentAt(t, sock, false)
			if err := <-done; err != nil {
				t.Fatalf("ADD with the agent back: %v", err)
			}
			if calls := agent.calls(t); len(calls) != 1 || calls[0].Method != "EnforceNpToPod" || calls[0].Request.Name != p.name {
				t.Fatalf("the agent got %+v, want the pod's EnforceNpToPod", calls)
			}
		})
	}
}

// An agent that never comes back fails the ADD within its deadline, naming
// the agent and that it waited, and the ADD gives back all it took; an agent
// that answers with an error is not waited for.
func TestPrivilegedNetworkPolicyADDGivesUpOnAnAbsentAgent(t *testing.T) {
	w := policyWorld(t, "standard")
	sock := filepath.Join(t.TempDir(), "npa.sock")
	rt := w.runtime(conflist(w.conf(map[string]any{"policyAgentSocket": sock, "timeouts": map[string]any{"add": "6s"}})))
	p := w.newPod("db")
	_, err := rt.add(p, nil)
	var ce *types.Error
	if !errors.As(err, &ce) || ce.Code != types.ErrInternal || !strings.Contains(ce.Msg, "network policy agent") ||
		!strings.Contains(ce.Msg, sock) || !strings.Contains(ce.Msg, "no agent answered on the socket within") {
		t.Fatalf("ADD: %v, want a CNI error naming the network policy agent, %s, and the wait", err, sock)
	}
	if !strings.Contains(pluginLog(t, w), waitLine) {
		t.Fatalf("the plugin log does not say it waited for the agent")
	}
	nothingLeft(t, w, p)

	refusing := startAgent(t, true)
	w2 := policyWorld(t, "standard")
	rt = w2.runtime(conflist(w2.conf(map[string]any{"policyAgentSocket": refusing.sock})))
	if _, err := rt.add(w2.newPod("db"), nil); err == nil || !strings.Contains(err.Error(), "Success=false") {
		t.Fatalf("ADD with the agent refusing: %v, want Success=false", err)
	}
	if strings.Contains(pluginLog(t, w2), waitLine) || len(refusing.calls(t)) != 1 {
		t.Fatalf("an agent that answered was waited for or asked again (%d calls)", len(refusing.calls(t)))
	}
}

// leaveDeadSocket leaves a socket file nothing listens on, as a killed
// agent does.
func leaveDeadSocket(t *testing.T, sock string) {
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
}

// waitLogged waits until the plugin logs that it waits for the agent; an
// ADD that ends first fails the test.
func waitLogged(t *testing.T, w *world, done chan error) {
	t.Helper()
	waitFor(t, "the plugin to wait for the agent", func() bool {
		select {
		case err := <-done:
			t.Fatalf("ADD ended (%v) before waiting for the agent", err)
		default:
		}
		return strings.Contains(pluginLog(t, w), waitLine)
	})
}

func pluginLog(t *testing.T, w *world) string {
	data, err := os.ReadFile(filepath.Join(w.stateDir, "plugin.log"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return string(data)
}
