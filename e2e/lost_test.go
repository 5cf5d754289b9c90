package e2e

import (
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"

	"vpc-cni/internal/testsupport/testenv"
	"vpc-cni/store"
)

// A lost state file never costs a running pod. Three pods run and state.db
// goes (a wiped state dir, a replaced disk): STATUS and doctor say so; the
// next ADD rebuilds the state under the reconcile lock and gets none of the
// running pods' addresses; the next reconcile leaves every running pod's
// address, veth, route and rules in place with its assignment restored;
// doctor names the rebuild. Then the file goes again and a reconcile comes
// first: it rebuilds before it plans, and its gc removes nothing.
func TestPrivilegedLostStateNeverCostsARunningPod(t *testing.T) {
	w := newWorld(t, worldOpts{instanceType: "t3.small", env: []string{"WARM_IP_TARGET=6", "IP_COOLDOWN_PERIOD=0"}})
	rt := w.runtimeWithCache(nil)
	pods := w.newPods("run", 3)
	for _, p := range pods {
		if _, err := rt.add(p, nil); err != nil {
			t.Fatalf("ADD %s: %v", p.id, err)
		}
	}
	before := w.assignmentsByKey()
	w.assertRunning(pods, before)

	w.loseState()
	if err := rt.status(); err == nil || !strings.Contains(err.Error(), "state lost: 3 running pods' wiring found with no state") {
		t.Errorf("STATUS on the lost state: %v", err)
	}
	w.wantDoctor("state file", false, "state lost: 3 running pods' wiring found with no state; run `vpcctl state rebuild`")

	fourth := w.newPod("new")
	start := time.Now()
	res, err := rt.add(fourth, nil)
	if err != nil {
		t.Fatalf("ADD after the state file was lost: %v", err)
	}
	t.Logf("the ADD that rebuilt the state took %s", time.Since(start)) // a figure for the notes, not asserted
	got := netip.MustParsePrefix(res.IPs[0].Address.String()).Addr()
	for _, a := range before {
		if a.IP == got {
			t.Fatalf("the new pod got %s, a running pod's address (%s)", got, a.Key)
		}
	}
	w.reconcile()
	after := w.assignmentsByKey()
	w.assertRestored(pods, before, after)
	w.assertRunning(pods, after)
	w.assertWiring(fourth, got, tableOf(after[fourth.id+"/eth0"]))
	w.wantPoolStatusPods(append(slices.Clone(pods), fourth))
	w.wantDoctor("state rebuild", true, "rebuilt from the kernel and EC2 (the state file was missing or new with 3 running pods' wiring")

	// Lost again, and this time a reconcile runs before any ADD: as the
	// DaemonSet's loop runs it, with CAP_NET_ADMIN alone (no CAP_SYS_ADMIN).
	w.loseState()
	r := w.vpcctlAsTheLoop(nil, "reconcile", "--wait", "--timeout", "1m", "--cni-cache-dir", rt.cacheDir)
	if r.err != nil || !strings.Contains(string(r.stderr), "4 running pods' wiring found with no state: rebuilt from EC2 and the kernel, 4 pods restored") {
		t.Fatalf("reconcile on the lost state: %v\n%s%s", r.err, r.stdout, r.stderr)
	}
	again := w.assignmentsByKey()
	w.assertRestored(append(pods, fourth), after, again)
	w.assertRunning(append(pods, fourth), again)
	w.checkStore()
	for _, p := range append(pods, fourth) {
		if err := rt.del(p, nil); err != nil {
			t.Errorf("DEL %s after the rebuild: %v", p.id, err)
		}
	}
	w.assertNodeClean()
}

// runtimeWithCache is w.runtime with the plugin told where libcni keeps its
// result cache (conflist key cniCacheDir), so a rebuild names the pods.
func (w *world) runtimeWithCache(extra map[string]any) *runtime {
	w.tb.Helper()
	cache := w.tb.TempDir()
	conf := w.conf(extra)
	conf["cniCacheDir"] = cache
	parsed, err := libcni.ConfListFromBytes(mustJSON(w.tb, conflist(conf)))
	if err != nil {
		w.tb.Fatal(err)
	}
	return &runtime{w: w, cni: libcni.NewCNIConfigWithCacheDir([]string{binDir}, cache, nil), list: parsed, cacheDir: cache}
}

// loseState removes state.db as a wiped state dir or a replaced disk does.
func (w *world) loseState() {
	w.tb.Helper()
	if err := os.Remove(filepath.Join(w.stateDir, store.DBFile)); err != nil {
		w.tb.Fatal(err)
	}
}

// assertRunning: each pod's address, veth, /32 route and rules are in
// place, and the node reaches it.
func (w *world) assertRunning(pods []*pod, held map[string]store.Assignment) {
	w.tb.Helper()
	for _, p := range pods {
		a, ok := held[p.id+"/"+p.ifname]
		if !ok {
			w.tb.Fatalf("no assignment for %s", p.id)
		}
		w.assertWiring(p, a.IP, tableOf(a))
		if err := ping(w.node, a.IP); err != nil {
			w.tb.Errorf("ping node -> %s (%s): %v", p.name, a.IP, err)
		}
	}
}

// assertRestored: every pod holds, under its own key, the address, ENI,
// veth and netns it held before the state file was lost.
func (w *world) assertRestored(pods []*pod, before, after map[string]store.Assignment) {
	w.tb.Helper()
	for _, p := range pods {
		key := p.id + "/" + p.ifname
		b, a := before[key], after[key]
		if a.IP != b.IP || a.ENIID != b.ENIID || a.HostVeth != b.HostVeth || a.Netns != b.Netns || a.PodName != b.PodName {
			w.tb.Errorf("%s after the rebuild: %s %s %s %s %s; before: %s %s %s %s %s", key,
				a.IP, a.ENIID, a.HostVeth, a.Netns, a.PodName, b.IP, b.ENIID, b.HostVeth, b.Netns, b.PodName)
		}
	}
}

// wantPoolStatusPods: `vpcctl pool status -o json` lists every pod by its
// container ID, as assigned.
func (w *world) wantPoolStatusPods(pods []*pod) {
	w.tb.Helper()
	r := w.vpcctl(nil, "pool", "status", "-o", "json")
	if r.err != nil {
		w.tb.Fatalf("pool status: %v\n%s", r.err, r.stderr)
	}
	var st struct {
		Pods []struct {
			ContainerID string `json:"containerId"`
		} `json:"pods"`
	}
	if err := json.Unmarshal(r.stdout, &st); err != nil {
		w.tb.Fatalf("pool status -o json: %v\n%s", err, r.stdout)
	}
	var ids []string
	for _, p := range st.Pods {
		ids = append(ids, p.ContainerID)
	}
	for _, p := range pods {
		if !slices.Contains(ids, p.id) {
			w.tb.Errorf("pool status lists %v, not %s", ids, p.id)
		}
	}
}

// wantDoctor finds check in `vpcctl doctor -o json` with ok and a detail
// holding want.
func (w *world) wantDoctor(check string, ok bool, want string) {
	w.tb.Helper()
	r := w.vpcctl(nil, "doctor", "-o", "json")
	var findings []struct {
		Check  string `json:"check"`
		OK     bool   `json:"ok"`
		Detail string `json:"detail"`
	}
	if err := json.Unmarshal(r.stdout, &findings); err != nil {
		w.tb.Fatalf("doctor -o json: %v (exit %v)\n%s%s", err, r.err, r.stdout, r.stderr)
	}
	for _, f := range findings {
		if f.Check == check && f.OK == ok && strings.Contains(f.Detail, want) {
			return
		}
	}
	w.tb.Errorf("doctor has no %q check ok=%v saying %q:\n%s", check, ok, want, r.stdout)
}

// The same through containerd's CRI with the shipped conflist: three pods
// run, state.db goes, a fourth sandbox starts. The four hold distinct
// addresses under their own sandbox IDs (containerd's CNI cache names them),
// and the node still reaches the first three.
func TestPrivilegedContainerdCRILostState(t *testing.T) {
	testenv.RequireRoot(t, needsRoot)
	if _, why := criBinaries(); why != "" {
		t.Skip(why)
	}
	w := newWorld(t, worldOpts{})
	logFile := filepath.Join(t.TempDir(), "plugin.log")
	cri := startContainerd(t, w, w.shippedConflist(logFile))
	t.Cleanup(func() { waitBackgroundPasses(t, logFile) })

	var pods []*criPod
	for _, name := range []string{"web-0", "web-1", "db-0"} {
		pods = append(pods, cri.runPod(t, "shop", name))
	}
	held := w.assertCRIPods(pods)
	waitBackgroundPasses(t, logFile)
	w.loseState()

	pods = append(pods, cri.runPod(t, "shop", "web-2"))
	for _, a := range held {
		if a.IP.String() == pods[3].ip {
			t.Fatalf("the fourth sandbox got %s, %s's address", pods[3].ip, a.PodName)
		}
	}
	after := w.assertCRIPods(pods) // distinct addresses, each under its sandbox ID, wired
	for _, p := range pods[:3] {
		key := p.id + "/" + p.ifname
		if after[key].IP != held[key].IP {
			t.Errorf("%s holds %s after the rebuild, %s before", p.name, after[key].IP, held[key].IP)
		}
		if err := ping(w.node, held[key].IP); err != nil {
			t.Errorf("ping node -> %s (%s): %v", p.name, held[key].IP, err)
		}
	}
	waitBackgroundPasses(t, logFile)
	for _, p := range pods {
		if _, err := cri.run("stopp", p.id); err != nil {
			t.Fatal(err)
		}
		if _, err := cri.run("rmp", p.id); err != nil {
			t.Fatal(err)
		}
	}
	waitBackgroundPasses(t, logFile)
	for _, p := range pods {
		_ = p.ns.Close() // the test's hold: the pairs go with the namespaces
	}
	w.waitNoVeths()
	w.assertNodeClean()
}
