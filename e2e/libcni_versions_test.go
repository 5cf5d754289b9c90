package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The plugin answers in the version it is asked: a 1.0.0 runtime must never
// get a 1.1.0 result ("unsupported CNI result version").
func TestPrivilegedResultVersionPerRequest(t *testing.T) {
	w := newWorld(t, worldOpts{})
	for _, v := range []string{"0.4.0", "1.0.0", "1.1.0"} {
		t.Run(v, func(t *testing.T) {
			conf := w.conf(map[string]any{"cniVersion": v})
			p := w.newPod("ver-" + strings.ReplaceAll(v, ".", "-"))
			r := w.cni("ADD", p, mustJSON(t, conf))
			if r.err != nil {
				t.Fatalf("ADD: %v %s %s", r.err, r.stdout, r.stderr)
			}
			if got := resultVersion(t, r.stdout); got != v {
				t.Errorf("asked for %s, the result says cniVersion %q: %s", v, got, r.stdout)
			}
			w.del(p, mustJSON(t, conf))
		})
	}
	w.assertNodeClean()
}

func resultVersion(tb testing.TB, out []byte) string {
	tb.Helper()
	var r struct {
		CNIVersion string `json:"cniVersion"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		tb.Fatalf("result %q: %v", out, err)
	}
	return r.CNIVersion
}

// libcniGenerations are the CNI library versions runtimes vendor and the
// result version each must pick from the shipped conflist: v1.1.x (containerd
// 1.6 and 1.7) ignores cniVersions and uses cniVersion; v1.2 and later
// (containerd 2.x, CRI-O) take the highest of cniVersions it knows.
var libcniGenerations = []struct{ version, result string }{
	{"v1.1.2", "1.0.0"},
	{"v1.3.1", "1.1.0"},
}

// The shipped conflist through cnitool built at each library generation:
// ADD picks the expected result version and wires the pod, DEL cleans up.
func TestPrivilegedShippedConflistLibcniVersions(t *testing.T) {
	w := newWorld(t, worldOpts{})
	confDir := t.TempDir()
	logFile := filepath.Join(t.TempDir(), "plugin.log")
	t.Cleanup(func() { waitBackgroundPasses(t, logFile) })
	conf := w.shippedConflist(logFile)
	if err := os.WriteFile(filepath.Join(confDir, "10-vpc-cni.conflist"), conf, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, gen := range libcniGenerations {
		t.Run(gen.version, func(t *testing.T) {
			cnitool := goTool(t, "github.com/containernetworking/cni/cnitool", gen.version, "cnitool")
			p := w.newPod("lib-" + strings.ReplaceAll(gen.version, ".", "-"))
			env := []string{"NETCONFPATH=" + confDir, "CNI_PATH=" + binDir, "CNI_IFNAME=" + p.ifname,
				"CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAMESPACE=" + p.namespace + ";K8S_POD_NAME=" + p.name}
			r := w.execInNode(cnitool, env, nil, "add", "vpc", p.ns.Path())
			if r.err != nil {
				t.Fatalf("cnitool %s add: %v\n%s%s", gen.version, r.err, r.stdout, r.stderr)
			}
			if got := resultVersion(t, r.stdout); got != gen.result {
				t.Errorf("libcni %s picked result version %q, want %s", gen.version, got, gen.result)
			}
			res := resultOf(t, r)
			w.assertWiring(p, addrOf(t, res.IPs[0].Address.IP), 0)
			if r := w.execInNode(cnitool, env, nil, "del", "vpc", p.ns.Path()); r.err != nil {
				t.Fatalf("cnitool %s del: %v\n%s%s", gen.version, r.err, r.stdout, r.stderr)
			}
		})
	}
	waitBackgroundPasses(t, logFile)
	w.assertNodeClean()
}
