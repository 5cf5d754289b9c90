package e2e

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/vishvananda/netlink"

	"vpc-cni/internal/testsupport/gotool"
	"vpc-cni/store"
)

// The plugin's calls to the network policy agent and the loop's answer to
// it, checked against the reference's generated gRPC code: testdata/npagent
// is built from github.com/aws/amazon-vpc-cni-k8s/rpc in a module of its
// own, so its heavy dependencies stay out of vpc-cni's go.mod.

var npagentBuild struct {
	once sync.Once
	path string
	err  error
}

// npagent builds testdata/npagent from the module proxy (its go.sum pins
// what it fetches) into the tools' cache, once per content of its sources.
func npagent(tb testing.TB) string {
	tb.Helper()
	b := &npagentBuild
	b.once.Do(func() { b.path, b.err = buildNPAgent() })
	if b.err != nil {
		tb.Fatal(b.err)
	}
	return b.path
}

func buildNPAgent() (string, error) {
	const src = "testdata/npagent"
	h := sha256.New()
	for _, f := range []string{"main.go", "go.mod", "go.sum"} {
		data, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			return "", err
		}
		h.Write(data)
	}
	path := filepath.Join(gotool.CacheDir(), fmt.Sprintf("npagent-%x", h.Sum(nil)[:8]), "npagent")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	tmp := path + ".tmp" + strconv.Itoa(os.Getpid())
	cmd := exec.Command(goBinary(), "build", "-o", tmp, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod -buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", errors.New("building testdata/npagent: " + err.Error() + "\n" + string(out))
	}
	return path, os.Rename(tmp, path) // a whole binary or none, for parallel runs
}

// fakeAgent is testdata/npagent serving NPBackend on sock, recording each
// request in record.
type fakeAgent struct {
	sock, record string
	cmd          *exec.Cmd
}

// npCall is one recorded request, with the reference's field names.
type npCall struct {
	Method  string `json:"method"`
	Request struct {
		Name           string `json:"K8S_POD_NAME"`
		Namespace      string `json:"K8S_POD_NAMESPACE"`
		Mode           string `json:"NETWORK_POLICY_MODE"`
		InterfaceCount int    `json:"InterfaceCount"`
	} `json:"request"`
}

// startAgent starts the agent (answering Success=!fail) and waits for its
// socket; the socket path is returned even when down is true (not started).
func startAgent(tb testing.TB, fail bool) *fakeAgent {
	tb.Helper()
	return startAgentAt(tb, filepath.Join(tb.TempDir(), "npa.sock"), fail)
}

// startAgentAt starts the agent on sock (its record beside it).
func startAgentAt(tb testing.TB, sock string, fail bool) *fakeAgent {
	tb.Helper()
	a := &fakeAgent{sock: sock, record: filepath.Join(filepath.Dir(sock), "calls.jsonl")}
	args := []string{"serve", a.sock, a.record}
	if fail {
		args = append(args, "fail")
	}
	a.cmd = exec.Command(npagent(tb), args...)
	a.cmd.Stderr = os.Stderr
	if err := a.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(a.stop)
	waitFor(tb, "the agent's socket", func() bool { _, err := os.Stat(a.sock); return err == nil })
	return a
}

func (a *fakeAgent) stop() {
	if a.cmd.ProcessState == nil {
		_ = a.cmd.Process.Kill()
		_ = a.cmd.Wait()
	}
}

// calls reads what the agent was asked so far (each request is written and
// synced before the agent answers it).
func (a *fakeAgent) calls(tb testing.TB) []npCall {
	tb.Helper()
	data, err := os.ReadFile(a.record)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		tb.Fatal(err)
	}
	var out []npCall
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var c npCall
		if err := json.Unmarshal(line, &c); err != nil {
			tb.Fatalf("record line %q: %v", line, err)
		}
		out = append(out, c)
	}
	return out
}

// waitFor polls a condition another process makes true, for up to 30 s.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatalf("waited 30 s for %s", what)
		}
	}
}

// policyWorld is a node with the mode set in its configuration file.
func policyWorld(t *testing.T, mode string) *world {
	var env []string
	if mode != "" {
		env = append(env, "NETWORK_POLICY_ENFORCING_MODE="+mode)
	}
	return newWorld(t, worldOpts{env: env})
}

// With the mode on, ADD asks the agent to enforce (pod, namespace, mode,
// one interface) and DEL to delete; with it off, the agent is never called.
func TestPrivilegedNetworkPolicyADDEnforcesAndDELDeletes(t *testing.T) {
	for _, mode := range []string{"strict", "standard", ""} {
		t.Run("mode="+mode, func(t *testing.T) {
			w := policyWorld(t, mode)
			agent := startAgent(t, false)
			rt := w.runtime(conflist(w.conf(map[string]any{"policyAgentSocket": agent.sock})))
			p := w.newPod("web-7d9f")
			if _, err := rt.add(p, nil); err != nil {
				t.Fatalf("ADD: %v", err)
			}
			if err := rt.del(p, nil); err != nil {
				t.Fatalf("DEL: %v", err)
			}
			calls := agent.calls(t)
			if mode == "" {
				if len(calls) != 0 {
					t.Fatalf("policy off, the agent got %+v", calls)
				}
				return
			}
			checkEnforceThenDelete(t, calls, p, mode)
			// The agent gone: DEL stays idempotent and succeeds.
			agent.stop()
			if err := rt.del(p, nil); err != nil {
				t.Fatalf("DEL again with the agent gone: %v", err)
			}
		})
	}
}

// A DEL of a sandbox that holds nothing (a late DEL of an older sandbox of a
// pod running again under the same name) leaves the agent alone: it knows
// pods by name, and a DeletePodNp would drop the live pod's policy (seen in
// the cluster tier: the new pod stayed denied). aws-cni calls it only for a
// sandbox ipamd still holds.
func TestPrivilegedNetworkPolicyDELOfASandboxHoldingNothingLeavesTheAgentAlone(t *testing.T) {
	w := policyWorld(t, "strict")
	agent := startAgent(t, false)
	rt := w.runtime(conflist(w.conf(map[string]any{"policyAgentSocket": agent.sock})))
	live := w.newPod("web-7d9f")
	if _, err := rt.add(live, nil); err != nil {
		t.Fatalf("ADD: %v", err)
	}
	older := w.newPod("web-7d9f") // the same pod's earlier sandbox, already released
	if err := rt.del(older, nil); err != nil {
		t.Fatalf("DEL of the earlier sandbox: %v", err)
	}
	if calls := agent.calls(t); len(calls) != 1 || calls[0].Method != "EnforceNpToPod" {
		t.Fatalf("the agent got %+v, want only the live pod's EnforceNpToPod", calls)
	}
}

func checkEnforceThenDelete(t *testing.T, calls []npCall, p *pod, mode string) {
	t.Helper()
	if len(calls) != 2 || calls[0].Method != "EnforceNpToPod" || calls[1].Method != "DeletePodNp" {
		t.Fatalf("the agent got %+v, want EnforceNpToPod (ADD) then DeletePodNp (DEL)", calls)
	}
	if r := calls[0].Request; r.Name != p.name || r.Namespace != p.namespace || r.Mode != mode || r.InterfaceCount != 1 {
		t.Fatalf("EnforceNpToPod %+v, want pod %s/%s, mode %s, 1 interface", r, p.namespace, p.name, mode)
	}
	if r := calls[1].Request; r.Name != p.name || r.Namespace != p.namespace || r.Mode != "" {
		t.Fatalf("DeletePodNp %+v, want pod %s/%s", r, p.namespace, p.name)
	}
}

// An agent that is not there, or that answers Success=false, fails the
// ADD with an error naming it, and the ADD gives back all it took.
func TestPrivilegedNetworkPolicyAgentFailureUndoesTheADD(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start func(t *testing.T) *fakeAgent
		want  string
	}{
		{"agent down", func(t *testing.T) *fakeAgent { return &fakeAgent{sock: filepath.Join(t.TempDir(), "npa.sock")} }, "no such file"},
		{"agent refuses", func(t *testing.T) *fakeAgent { return startAgent(t, true) }, "Success=false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := policyWorld(t, "standard")
			agent := tc.start(t)
			// A short ADD deadline: an absent agent is waited for during part of it.
			rt := w.runtime(conflist(w.conf(map[string]any{"policyAgentSocket": agent.sock, "timeouts": map[string]any{"add": "6s"}})))
			p := w.newPod("db")
			_, err := rt.add(p, nil)
			var ce *types.Error
			if !errors.As(err, &ce) || ce.Code != types.ErrInternal || !strings.Contains(ce.Msg, "network policy agent") ||
				!strings.Contains(ce.Msg, agent.sock) || !strings.Contains(ce.Msg, tc.want) {
				t.Fatalf("ADD: %v, want a CNI error naming the network policy agent, %s and %q", err, agent.sock, tc.want)
			}
			nothingLeft(t, w, p)
			if err := rt.del(p, nil); err != nil {
				t.Fatalf("DEL after the failed ADD: %v", err)
			}
		})
	}
}

// nothingLeft: no assignment for p, no host veth, no pod interface, no
// route or rule to a pod address on the node.
func nothingLeft(t *testing.T, w *world, p *pod) {
	t.Helper()
	for _, a := range w.assignments() {
		if a.ContainerID == p.id {
			t.Errorf("the failed ADD left %s taken: %+v", a.IP, a)
		}
	}
	w.inNode(func() error {
		if _, err := netlink.LinkByName(p.hostVeth()); err == nil {
			t.Errorf("the failed ADD left the host veth %s", p.hostVeth())
		}
		routes, err := netlink.RouteList(nil, netlink.FAMILY_V4)
		for _, r := range routes {
			if r.Dst != nil && r.Dst.IP.Equal(w.nodeIP.AsSlice()) {
				continue
			}
			if r.Dst != nil && strings.HasPrefix(r.Dst.String(), "100.") && r.Dst.Mask.String() == "ffffffff" {
				t.Errorf("the failed ADD left a pod route %v", r)
			}
		}
		rules, _ := netlink.RuleList(netlink.FAMILY_V4)
		for _, r := range rules {
			if r.Priority == 512 || r.Priority == 1536 {
				t.Errorf("the failed ADD left a pod rule %v", r)
			}
		}
		return err
	})
	if err := p.ns.Do(func(ns.NetNS) error {
		if _, err := netlink.LinkByName(p.ifname); err == nil {
			t.Errorf("the failed ADD left %s in the pod", p.ifname)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// The DaemonSet's loop answers the agent's start-up question on a
// root-only socket with every field of the reference's reply, and with the
// mode off serves nothing.
func TestPrivilegedNetworkPolicyLoopAnswersTheAgent(t *testing.T) {
	w := policyWorld(t, "strict")
	sock := filepath.Join(t.TempDir(), "aws-node", "ipamd.sock")
	// What a killed loop leaves: its socket, and the directory it binds in.
	leftover := filepath.Join(filepath.Dir(sock), ".vpc-cni-sock-123")
	if err := os.MkdirAll(leftover, 0o700); err != nil || os.WriteFile(sock, nil, 0o644) != nil {
		t.Fatal(err)
	}
	startPolicyLoop(t, w, sock, "answering the agent's GetNetworkPolicyConfigs on "+sock)
	if _, err := os.Stat(leftover); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the leftover %s: %v", leftover, err)
	}
	fi, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 || st.Uid != 0 {
		t.Fatalf("%s: mode %v uid %d, want a socket 0600 owned by root", sock, fi.Mode(), st.Uid)
	}
	out, err := exec.Command(npagent(t), "config", sock).Output()
	if err != nil {
		t.Fatalf("GetNetworkPolicyConfigs: %v", err)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	var node store.Node
	w.view(func(tx *store.Tx) (err error) { node, _, err = tx.Node(); return err })
	want := map[string]any{"NetworkPolicyMode": "strict", "MultiNICEnabled": false, "NodeIPv4": w.nodeIP.String(),
		"NodeIPv6": "", "InstanceID": w.sim.State().InstanceID, "Region": node.Region}
	if node.Region == "" || !jsonEqual(got, want) {
		t.Fatalf("reply %s, want %v", out, want)
	}
}

func TestPrivilegedNetworkPolicyLoopServesNothingWhenOff(t *testing.T) {
	w := policyWorld(t, "")
	sock := filepath.Join(t.TempDir(), "ipamd.sock")
	startPolicyLoop(t, w, sock, "network policy off")
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("policy off, %s: %v, want no socket", sock, err)
	}
}

func jsonEqual(a, b map[string]any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// startPolicyLoop starts `vpcctl reconcile --every` with its policy socket
// at sock and waits for the line that says what it does about it.
func startPolicyLoop(t *testing.T, w *world, sock, line string) {
	cmd := exec.Command(bin("vpcctl"), "--state-dir", w.stateDir, "reconcile", "--every", "1h", "--timeout", "25s",
		"-o", "summary", "--policy-config-socket", sock)
	cmd.Env = os.Environ()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	w.inNode(func() error { return cmd.Start() })
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(stderr)
	var seen []string
	for sc.Scan() {
		seen = append(seen, sc.Text())
		if strings.Contains(sc.Text(), line) {
			go func() { _, _ = io.Copy(io.Discard, stderr) }()
			return
		}
	}
	t.Fatalf("the loop ended without saying %q: %s", line, strings.Join(seen, "\n"))
}
