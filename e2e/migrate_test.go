package e2e

import (
	"encoding/json"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"vpc-cni/internal/awsnode"
	"vpc-cni/pool"
	"vpc-cni/store"
)

// A node the reference runs, with pods on its primary ENI and on a second
// ENI, is taken over by `vpcctl migrate --from-aws-node`: every pod of the
// checkpoint is recorded with its address, interface, namespace and host
// veth; reconcile releases none of them; DEL of a migrated pod through this
// plugin removes its wiring and frees its address; new pods never get an
// address a migrated pod holds.
func TestPrivilegedMigrateFromAWSNode(t *testing.T) {
	// Excess goes back a second after a pass first sees it: the reference's
	// warm addresses are released, the migrated pods' must not be.
	env := []string{"WARM_IP_TARGET=1", "IP_COOLDOWN_PERIOD=0", "RELEASE_DELAY=1"}
	w := newWorld(t, worldOpts{instanceType: "t3.small", env: env, fresh: true})
	byENI := refAllocate(t, w, 3, 3) // t3.small: 3 ENIs x 3 secondary addresses
	st := w.sim.State()
	primary, second := byENI[st.ENIs[0].ID], byENI[st.ENIs[1].ID]
	pods := []refPod{
		{w.newPod("web-0"), primary[0], 0},
		{w.newPod("web-1"), primary[1], 0},
		{w.newPod("db-0"), second[0], 2},
		{w.newPod("db-1"), second[1], 2},
	}
	for _, p := range pods {
		refWire(t, w, p)
	}
	gone := refPod{w.newPod("gone"), second[2], 2} // in the checkpoint, its veth already deleted
	checkpoint := refCheckpoint(t, awsnode.Version, append(pods, gone)...)

	assertMigrateRefusals(t, w, pods)

	dry := w.migrate(t, "--checkpoint", checkpoint, "--dry-run")
	if !dry.DryRun || countAdopted(dry) != len(pods) {
		t.Errorf("dry run: %+v", dry)
	}
	if _, err := w.assignmentsOrNone(); err != nil {
		t.Fatalf("the dry run changed the state: %v", err)
	}
	out := w.migrate(t, "--checkpoint", checkpoint)
	if countAdopted(out) != len(pods) {
		t.Errorf("migrate adopted %d pods, want %d: %+v", countAdopted(out), len(pods), out.Pods)
	}
	w.checkStore()
	assertMigrated(t, w, pods, st.ENIs[0].ID, st.ENIs[1].ID)
	if again := w.migrate(t, "--checkpoint", checkpoint); !again.Already {
		t.Errorf("a second migrate did not find the pods recorded: %+v", again)
	}

	w.reconcileUntilReleased(env, len(primary)+len(second))
	assertMigrated(t, w, pods, st.ENIs[0].ID, st.ENIs[1].ID)
	assertStillInEC2(t, w, pods)

	conf := mustJSON(t, w.conf(nil))
	for _, p := range []refPod{pods[0], pods[2]} { // one per ENI
		w.del(p.pod, conf)
		assertUnwired(t, w, p)
	}
	live := []refPod{pods[1], pods[3]}
	for _, p := range w.newPods("new", 5) {
		got, _ := netip.AddrFromSlice(w.add(p, conf).IPs[0].Address.IP)
		got = got.Unmap()
		for _, m := range live {
			if got == m.ip {
				t.Errorf("ADD %s got %s, which migrated pod %s holds", p.name, got, m.name)
			}
		}
	}
	assertMigrated(t, w, live, st.ENIs[0].ID, st.ENIs[1].ID)
	w.checkStore()
}

// assertMigrateRefusals: each is refused with exit 2, naming the problem,
// and leaves no state.
func assertMigrateRefusals(t *testing.T, w *world, pods []refPod) {
	t.Helper()
	outsider := refPod{w.newPod("outsider"), netip.MustParseAddr("100.127.250.250"), 0}
	refWire(t, w, outsider)
	cases := []struct{ name, checkpoint, says string }{
		{"address not on the node", refCheckpoint(t, awsnode.Version, append(pods, outsider)...),
			"100.127.250.250 (e2e/outsider, " + outsider.id + "/eth0): EC2 does not list it"},
		{"unknown version", refCheckpoint(t, "vpc-cni-ipam/2", pods...), `unknown checkpoint version "vpc-cni-ipam/2"`},
		{"malformed", writeTemp(t, `{"version":"vpc-cni-ipam/1","allocations":[{"containerID":"x"}]}`), "no ifName"},
		{"missing", "/nonexistent/ipam.json", "no checkpoint at /nonexistent/ipam.json"},
	}
	for _, c := range cases {
		r := w.vpcctl(nil, "migrate", "--from-aws-node", "--checkpoint", c.checkpoint)
		if code := r.state.ExitCode(); code != 2 || !strings.Contains(string(r.stderr), c.says) {
			t.Errorf("%s: exit %d, stderr %s; want 2 saying %q", c.name, code, r.stderr, c.says)
		}
	}
	if r := w.vpcctl(nil, "migrate", "--checkpoint", cases[1].checkpoint); r.state.ExitCode() != 2 {
		t.Errorf("migrate without --from-aws-node: exit %d", r.state.ExitCode())
	}
	if all, err := w.assignmentsOrNone(); err != nil || len(all) > 0 {
		t.Fatalf("a refused migrate left assignments %v (%v)", all, err)
	}
	unwireByHand(t, w, outsider)
}

func (w *world) migrate(t *testing.T, args ...string) migratedOut {
	t.Helper()
	r := w.vpcctl(nil, append([]string{"migrate", "--from-aws-node", "-o", "json"}, args...)...)
	if r.err != nil {
		t.Fatalf("vpcctl migrate %v: %v\n%s\n%s", args, r.err, r.stdout, r.stderr)
	}
	var out migratedOut
	if err := json.Unmarshal(r.stdout, &out); err != nil {
		t.Fatalf("migrate output: %v\n%s", err, r.stdout)
	}
	t.Logf("migrate %v: %s", args, r.stdout)
	return out
}

type migratedOut struct {
	DryRun  bool `json:"dryRun"`
	Already bool `json:"alreadyMigrated"`
	Pods    []struct {
		Key     string `json:"key"`
		Adopted bool   `json:"adopted"`
		Profile string `json:"profile"`
	} `json:"pods"`
	Findings []string `json:"findings"`
}

func countAdopted(out migratedOut) int {
	n := 0
	for _, p := range out.Pods {
		if p.Adopted {
			n++
		}
	}
	return n
}

// assignmentsOrNone is the store's assignments, none if it was never
// initialized.
func (w *world) assignmentsOrNone() ([]store.Assignment, error) {
	st, err := store.Open(w.stateDir, store.Options{ReadOnly: true})
	if errors.Is(err, store.ErrNotInitialized) {
		return nil, nil // never created: nothing but a creator makes the file
	}
	if err != nil {
		return nil, err
	}
	var all []store.Assignment
	err = st.View(func(tx *store.Tx) (err error) { all, err = tx.Assignments(); return err })
	if errors.Is(err, store.ErrNotInitialized) {
		return nil, nil
	}
	return all, err
}

// assertMigrated: each pod is assigned its address on its ENI, with the
// checkpoint's identity and the kernel's wiring.
func assertMigrated(t *testing.T, w *world, pods []refPod, primaryENI, secondENI string) {
	t.Helper()
	have := w.assignmentsByKey()
	for _, p := range pods {
		a, ok := have[store.AssignmentKey(p.id, p.ifname)]
		eni := map[bool]string{true: primaryENI, false: secondENI}[p.table == 0]
		switch {
		case !ok:
			t.Errorf("%s: no assignment", p.name)
		case a.IP != p.ip || a.ENIID != eni || a.HostVeth != p.hostVeth() || a.Netns != p.ns.Path() ||
			a.PodNamespace != p.namespace || a.PodName != p.name || a.Network != "aws-cni":
			t.Errorf("%s: assignment %+v; want %s on %s, veth %s, netns %s", p.name, a, p.ip, eni, p.hostVeth(), p.ns.Path())
		}
	}
}

// assertStillInEC2: the pods' addresses are still on the node's ENIs.
func assertStillInEC2(t *testing.T, w *world, pods []refPod) {
	t.Helper()
	var on []netip.Addr
	for _, e := range w.sim.State().ENIs {
		on = append(on, e.Secondary...)
	}
	for _, p := range pods {
		if !slices.Contains(on, p.ip) {
			t.Errorf("%s's address %s was released in EC2", p.name, p.ip)
		}
	}
}

// reconcileUntilReleased runs passes until one has released some of the
// node's had addresses (the release delay has passed), then until settled.
func (w *world) reconcileUntilReleased(env []string, had int) {
	w.tb.Helper()
	deadline := time.Now().Add(time.Minute)
	for secondaryCount(w) >= had {
		if time.Now().After(deadline) {
			w.tb.Fatalf("no pass released any of the %d addresses in a minute", had)
		}
		w.reconcile(env...)
	}
	w.reconcileUntilSettled(env...)
}

func secondaryCount(w *world) int {
	n := 0
	for _, e := range w.sim.State().ENIs {
		n += len(e.Secondary)
	}
	return n
}

// assertUnwired: DEL removed the pod's node side and its assignment, and
// its address is the pool's again.
func assertUnwired(t *testing.T, w *world, p refPod) {
	t.Helper()
	hs := w.hostState()
	if slices.Contains(hs.Veths, p.hostVeth()) {
		t.Errorf("%s: host veth %s left", p.name, p.hostVeth())
	}
	for _, r := range hs.Rules {
		if r.IP == p.ip {
			t.Errorf("%s: rule %+v left", p.name, r)
		}
	}
	for _, r := range hs.Routes {
		if r.IP == p.ip {
			t.Errorf("%s: route %+v left", p.name, r)
		}
	}
	if _, ok := w.assignmentsByKey()[store.AssignmentKey(p.id, p.ifname)]; ok {
		t.Errorf("%s: assignment left after DEL", p.name)
	}
	var snap pool.Snapshot
	w.view(func(tx *store.Tx) (err error) { snap, err = tx.Snapshot(); return err })
	for _, e := range snap.ENIs {
		for _, b := range e.Blocks {
			for _, a := range b.Addrs {
				if a.IP == p.ip && a.State == pool.Assigned {
					t.Errorf("%s: %s still assigned in the pool", p.name, p.ip)
				}
			}
		}
	}
}
