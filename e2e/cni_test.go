package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/plugins/pkg/ns"

	"vpc-cni/internal/testsupport/testenv"
	"vpc-cni/netns"
)

// pod is one sandbox: its netns and the Kubernetes identity the runtime
// passes in CNI_ARGS.
type pod struct {
	ns        ns.NetNS
	namespace string
	name      string
	id        string // container ID
	ifname    string
}

func (w *world) newPod(name string) *pod {
	n := w.pods.Add(1)
	return &pod{ns: testenv.NewNetNS(w.tb), namespace: "e2e", name: name,
		id: fmt.Sprintf("c%04d-%s", n, name), ifname: "eth0"}
}

// hostVeth is the reference's name for the pod's host veth.
func (p *pod) hostVeth() string { return netns.HostVethName(p.namespace, p.name) }

func (p *pod) k8sArgs() [][2]string {
	return [][2]string{{"IgnoreUnknown", "1"}, {"K8S_POD_NAMESPACE", p.namespace}, {"K8S_POD_NAME", p.name}}
}

// env is what a runtime sets to run one verb for p.
func (p *pod) env(verb string) []string {
	return []string{"CNI_COMMAND=" + verb, "CNI_CONTAINERID=" + p.id, "CNI_NETNS=" + p.ns.Path(),
		"CNI_IFNAME=" + p.ifname, "CNI_PATH=" + binDir,
		"CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAMESPACE=" + p.namespace + ";K8S_POD_NAME=" + p.name}
}

// conf is the plugin's network configuration: background reconcile off so
// the pool changes only when a test says so, plus extra keys.
func (w *world) conf(extra map[string]any) map[string]any {
	c := map[string]any{"cniVersion": "1.1.0", "name": "vpc", "type": "vpc-cni",
		"stateDir": w.stateDir, "logFile": filepath.Join(w.stateDir, "plugin.log"),
		"backgroundReconcile": false}
	for k, v := range extra {
		c[k] = v
	}
	return c
}

func mustJSON(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// cni execs the vpc-cni binary for one verb, like a runtime.
func (w *world) cni(verb string, p *pod, conf []byte) run {
	return w.execInNode(bin("vpc-cni"), p.env(verb), conf)
}

// add runs ADD and fails the test unless it succeeds with one address.
func (w *world) add(p *pod, conf []byte) *current.Result {
	w.tb.Helper()
	return resultOf(w.tb, w.cni("ADD", p, conf))
}

// del runs DEL and fails the test unless it succeeds.
func (w *world) del(p *pod, conf []byte) {
	w.tb.Helper()
	if r := w.cni("DEL", p, conf); r.err != nil {
		w.tb.Fatalf("DEL %s: %v\nstdout: %s\nstderr: %s", p.id, r.err, r.stdout, r.stderr)
	}
}

func resultOf(tb testing.TB, r run) *current.Result {
	tb.Helper()
	if r.err != nil {
		tb.Fatalf("plugin failed: %v\nstdout: %s\nstderr: %s", r.err, r.stdout, r.stderr)
	}
	generic, err := current.NewResult(r.stdout)
	if err != nil {
		tb.Fatalf("result %s: %v", r.stdout, err)
	}
	res, err := current.GetResult(generic)
	if err != nil {
		tb.Fatal(err)
	}
	if len(res.IPs) != 1 {
		tb.Fatalf("result has %d addresses, want 1: %s", len(res.IPs), r.stdout)
	}
	return res
}

// cniError parses the spec's error JSON a failed plugin printed on stdout.
func cniError(tb testing.TB, r run) *types.Error {
	tb.Helper()
	if r.err == nil {
		tb.Fatalf("plugin succeeded, want an error; stdout: %s", r.stdout)
	}
	var e types.Error
	if err := json.Unmarshal(r.stdout, &e); err != nil || e.Code == 0 {
		tb.Fatalf("stdout is not the spec's error JSON (%v): %q stderr: %q", err, r.stdout, r.stderr)
	}
	return &e
}

// withPrev adds the ADD result as prevResult, as a runtime does for CHECK
// and DEL.
func withPrev(tb testing.TB, conf map[string]any, res *current.Result) []byte {
	tb.Helper()
	conf["prevResult"] = res
	return mustJSON(tb, conf)
}
