package e2e

import (
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"vpc-cni/internal/testsupport/testenv"
	"vpc-cni/settings"
	"vpc-cni/sim/ec2sim"
	"vpc-cni/store"
)

// shippedConflist is deploy/10-vpc-cni.conflist as shipped, with only the
// plugin's stateDir and logFile pointed at the world's temp dirs.
func (w *world) shippedConflist(logFile string) []byte {
	w.tb.Helper()
	b, err := os.ReadFile(filepath.Join("..", "deploy", "10-vpc-cni.conflist"))
	if err != nil {
		w.tb.Fatal(err)
	}
	var list map[string]any
	if err := json.Unmarshal(b, &list); err != nil {
		w.tb.Fatalf("deploy/10-vpc-cni.conflist: %v", err)
	}
	plugin := list["plugins"].([]any)[0].(map[string]any)
	plugin["stateDir"], plugin["logFile"] = w.stateDir, logFile
	return mustJSON(w.tb, list)
}

// The shipped conflist under a real runtime, driven as kubelet drives it:
// crictl → Debian's containerd (1.6, CNI library v1.1) → runc and a pause
// image, containerd running in the node netns.
func TestPrivilegedContainerdCRI(t *testing.T) {
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
	plain := make([]*pod, len(pods))
	for i, p := range pods {
		plain[i] = p.pod
	}
	w.assertTraffic(plain, held)
	w.assertStatusNamesPods(pods)

	waitBackgroundPasses(t, logFile)
	for _, p := range pods {
		if _, err := cri.run("stopp", p.id); err != nil {
			t.Fatal(err)
		}
		// DEL has run: nothing routes to the pod any more, whether or not
		// the kernel has destroyed its veth pair yet.
		w.assertNotRouted(held[p.id+"/"+p.ifname])
		_ = p.ns.Close() // the test's own hold: the runtime's is all that keeps the namespace now
		if _, err := cri.run("rmp", p.id); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(p.ns.Path()); err == nil {
			t.Errorf("pod %s: netns %s still there after rmp", p.name, p.ns.Path())
		}
	}
	waitBackgroundPasses(t, logFile)
	// DEL leaves the pairs to the namespaces' deletion: they must all go.
	w.waitNoVeths()
	w.assertNodeClean()
}

// assertNotRouted: no host route or rule of a's addresses
// is left in the node namespace.
func (w *world) assertNotRouted(a store.Assignment) {
	w.tb.Helper()
	st := w.rawHostState()
	for _, r := range st.Routes {
		if r.IP == a.IP || r.IP == a.IPv6 {
			w.tb.Errorf("route to %s dev %s left after DEL", r.IP, r.Veth)
		}
	}
	for _, r := range st.Rules {
		if r.IP == a.IP || r.IP == a.IPv6 {
			w.tb.Errorf("rule %d for %s left after DEL", r.Priority, r.IP)
		}
	}
}

// assertCRIPods: distinct addresses held by the pods containerd named, the
// CRI plugin reports the same address, and each pod is wired as
// docs/networking.md says (host veth named from the pod's namespace and name).
func (w *world) assertCRIPods(pods []*criPod) map[string]store.Assignment {
	w.tb.Helper()
	held := w.assignmentsByKey()
	if len(held) != len(pods) {
		w.tb.Fatalf("%d assignments for %d pods: %+v", len(held), len(pods), held)
	}
	seen := map[netip.Addr]string{}
	for _, p := range pods {
		a, ok := held[p.id+"/"+p.ifname]
		if !ok {
			w.tb.Fatalf("no assignment for sandbox %s (%s)", p.id, p.name)
		}
		if a.PodNamespace != p.namespace || a.PodName != p.name {
			w.tb.Errorf("assignment of %s names pod %s/%s, want %s/%s", p.id, a.PodNamespace, a.PodName, p.namespace, p.name)
		}
		if other, dup := seen[a.IP]; dup {
			w.tb.Errorf("%s and %s both hold %s", other, p.name, a.IP)
		}
		seen[a.IP] = p.name
		if !netip.MustParsePrefix("100.64.0.0/10").Contains(a.IP) {
			w.tb.Errorf("pod %s got %s, not a simulated VPC address", p.name, a.IP)
		}
		if p.ip != a.IP.String() {
			w.tb.Errorf("crictl reports %s for %s, the store %s", p.ip, p.name, a.IP)
		}
		w.assertWiring(p.pod, a.IP, tableOf(a))
	}
	return held
}

// assertStatusNamesPods: `vpcctl pool status` names every pod, in the table
// and in JSON with its sandbox ID.
func (w *world) assertStatusNamesPods(pods []*criPod) {
	w.tb.Helper()
	r := w.vpcctl(nil, "pool", "status", "-o", "json")
	if r.err != nil {
		w.tb.Fatalf("vpcctl pool status: %v %s", r.err, r.stderr)
	}
	var st struct {
		Pods []struct {
			Pod         string `json:"pod"`
			ContainerID string `json:"containerId"`
			IfName      string `json:"ifName"`
		} `json:"pods"`
	}
	if err := json.Unmarshal(r.stdout, &st); err != nil {
		w.tb.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range st.Pods {
		got[p.Pod] = p.ContainerID + "/" + p.IfName
	}
	table := w.vpcctl(nil, "pool", "status")
	for _, p := range pods {
		name := p.namespace + "/" + p.name
		if got[name] != p.id+"/eth0" {
			w.tb.Errorf("pool status -o json: pod %s holds %q, want %s/eth0", name, got[name], p.id)
		}
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\s`).Match(table.stdout) {
			w.tb.Errorf("pool status table does not name %s:\n%s", name, table.stdout)
		}
	}
}

var startedRe = regexp.MustCompile(`msg="background reconcile started".* child=(\d+)`)

// waitBackgroundPasses waits for every detached reconcile the plugin logged
// starting: they run in the node netns against the emulator and write into
// the test's dirs, so the test must not end under them.
func waitBackgroundPasses(tb testing.TB, logFile string) {
	tb.Helper()
	b, err := os.ReadFile(logFile)
	if err != nil {
		return
	}
	for _, m := range startedRe.FindAllSubmatch(b, -1) {
		pid, _ := strconv.Atoi(string(m[1]))
		if !waitPidGone(pid, 2*time.Minute) {
			tb.Errorf("background reconcile %d still running after 2 minutes", pid)
		}
	}
}

// A pod that containerd starts with the vpc-cni.io/profile annotation gets
// its profile: the shipped conflist declares the pod-annotations capability,
// containerd passes the sandbox's annotations, and the address is on an ENI
// of that profile, with its groups; a pod without it stays in the default
// pool. DEL (stopp) goes by the stored assignment.
func TestPrivilegedContainerdCRIProfiles(t *testing.T) {
	testenv.RequireRoot(t, needsRoot)
	if _, why := criBinaries(); why != "" {
		t.Skip(why)
	}
	var goldSubnet string
	w := newWorld(t, worldOpts{instanceType: "t3.medium", prepare: func(s *ec2sim.Sim) []string {
		var err error
		if goldSubnet, err = s.AddSubnet(goldCIDR, "", nil); err != nil {
			t.Fatal(err)
		}
		return []string{"WARM_IP_TARGET=2", "PROFILE_GOLD_SECURITY_GROUPS=" + goldGroup, "PROFILE_GOLD_SUBNETS=" + goldSubnet,
			"PROFILE_GOLD_WARM_IP_TARGET=2"}
	}})
	logFile := filepath.Join(t.TempDir(), "plugin.log")
	cri := startContainerd(t, w, w.shippedConflist(logFile))
	t.Cleanup(func() { waitBackgroundPasses(t, logFile) })

	gold := cri.runPodAnnotated(t, "shop", "vault-0", map[string]string{settings.ProfileAnnotation: "gold"})
	plain := cri.runPod(t, "shop", "web-0")
	held := w.assignmentsByKey()
	enis := map[string]ec2sim.ENI{}
	for _, e := range w.sim.State().ENIs {
		enis[e.ID] = e
	}
	g, p := held[gold.id+"/eth0"], held[plain.id+"/eth0"]
	if g.Profile != "gold" || !goldCIDR.Contains(g.IP) || gold.ip != g.IP.String() {
		t.Fatalf("the annotated pod: %+v (crictl says %s); want profile gold in %s", g, gold.ip, goldCIDR)
	}
	if e := enis[g.ENIID]; e.Tags[settings.ProfileTag] != "gold" || !slices.Equal(e.Groups, []string{goldGroup}) ||
		!slices.Contains(e.Secondary, g.IP) {
		t.Fatalf("gold's pod %s is on %s: tags %v, groups %v, addresses %v", g.IP, e.ID, e.Tags, e.Groups, e.Secondary)
	}
	if p.Profile != "" || enis[p.ENIID].Tags[settings.ProfileTag] != "" {
		t.Fatalf("the pod without the annotation: %+v on %+v", p, enis[p.ENIID])
	}
	w.assertWiring(gold.pod, g.IP, tableOf(g))
	waitBackgroundPasses(t, logFile)
	for _, sb := range []*criPod{gold, plain} {
		if _, err := cri.run("stopp", sb.id); err != nil {
			t.Fatal(err)
		}
		_ = sb.ns.Close()
		if _, err := cri.run("rmp", sb.id); err != nil {
			t.Fatal(err)
		}
	}
	if got := w.assignmentsByKey(); len(got) != 0 {
		t.Fatalf("assignments left after stopp: %+v", got)
	}
	waitBackgroundPasses(t, logFile)
	w.waitNoVeths()
}
