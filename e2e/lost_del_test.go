package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"vpc-cni/store"
)

// A DEL that finds no assignment and no prevResult still unroutes its own
// sandbox. The state file lost the pod (a rebuild read the kernel just
// before the pod's ADD wired it, so the new file holds its address free) and
// the runtime sends DEL with no cached result. The DEL must remove the host
// route and rules through the pod's host veth, which leads into the
// sandbox's namespace: left routed, the pod counts as running for ever, and
// the next ADD that is given its address holds it as an unknown pod's
// ("unknown-<veth>") that no DEL will release.
func TestPrivilegedDelWithNoStateOrPrevResultUnroutesItsSandbox(t *testing.T) {
	w := newWorld(t, worldOpts{instanceType: "t3.small", env: []string{"WARM_IP_TARGET=3", "IP_COOLDOWN_PERIOD=0"}})
	conf := mustJSON(t, w.conf(nil))
	path := filepath.Join(w.stateDir, store.DBFile)
	before, err := os.ReadFile(path) // the pool with every address free
	if err != nil {
		t.Fatal(err)
	}
	p := w.newPod("lost")
	ip := addrOf(t, w.add(p, conf).IPs[0].Address.IP)
	writeReplacing(t, path, before)

	w.del(p, conf)
	for _, r := range w.hostState().Routes {
		if r.IP == ip {
			t.Errorf("DEL left the host route %s dev %s", r.IP, r.Veth)
		}
	}
	for _, r := range w.hostState().Rules {
		if r.IP == ip {
			t.Errorf("DEL left the rule prio %d for %s", r.Priority, r.IP)
		}
	}

	q := w.newPod("next")
	w.add(q, conf)
	for _, a := range w.assignments() {
		if strings.HasPrefix(a.ContainerID, "unknown-") {
			t.Errorf("%s holds %s as an unknown running pod's after its DEL", a.Key, a.IP)
		}
	}
}

// writeReplacing puts raw at path as a new file (a rebuild's is one).
func writeReplacing(tb testing.TB, path string, raw []byte) {
	tb.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		tb.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		tb.Fatal(err)
	}
}
