package e2e

import (
	"encoding/json"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/types"

	"vpc-cni/store"
)

// A state dir made on instance A (an image builder, or a copy from another
// node) lands on instance B, which has its own ENIs, subnet and IMDS. STATUS
// fails with code 50 naming the cause before any pass; an ADD hands out none
// of A's addresses; the pass sets A's file aside (renamed, 0600), records
// why in the new file, doctor names the kept file, the node is B, and pods
// get B's addresses. B's EC2 never hears of A's ENIs. Then the copy lands
// again on B, now with a pod running, and an ADD with inline grow comes
// first: the pass it runs sets the copy aside, rebuilds B's running pod from
// the kernel and serves the new pod from B's pool.
func TestPrivilegedStateFromAnotherInstanceIsSetAside(t *testing.T) {
	knobs := []string{"WARM_IP_TARGET=3", "IP_COOLDOWN_PERIOD=0"}
	a := newWorld(t, worldOpts{instanceType: "t3.small", env: knobs})
	if _, err := a.runtime(conflist(a.conf(nil))).add(a.newPod("on-a"), nil); err != nil {
		t.Fatalf("ADD on A: %v", err)
	}
	aID, aAddrs, aENIs := a.sim.State().InstanceID, a.poolAddrs(), a.sim.State().ENIs
	copied := a.copyState()

	const bID = "i-0b0b0b0b0b0b0b0b0"
	bSubnet := netip.MustParsePrefix("100.64.16.0/20")
	b := newWorld(t, worldOpts{instanceType: "m5.large", instanceID: bID, fresh: true, env: knobs, subnet: bSubnet})
	b.putState(copied, "a-boot-of-instance-a") // A's kernel confirmed it, not this one
	noGrow := b.runtimeWithCache(map[string]any{"inlineGrow": false})

	wantCNIError(t, "STATUS before a pass", noGrow.status(), types.ErrPluginNotAvailable, "state not confirmed for this instance", aID, bID)
	first := b.newPod("first")
	_, err := noGrow.add(first, nil)
	wantCNIError(t, "ADD before a pass", err, types.ErrTryAgainLater, "state not confirmed for this instance", aID)

	b.reconcile(knobs...)
	kept := b.keptFile(aID)
	b.wantEvent("identity-changed", aID, bID, kept)
	b.wantDoctor("kept state", true, kept)
	if id := b.nodeField("instanceId"); id != bID {
		t.Fatalf("the node after the pass is %q, want %s", id, bID)
	}
	if err := noGrow.status(); err != nil {
		t.Errorf("STATUS after the pass learnt B: %v", err)
	}
	got := b.addOn(noGrow, first)
	wantAddressIn(t, got, bSubnet, aAddrs)

	// The copy again, over B's own file with "first" running; inline grow on.
	b.putState(copied, "a-boot-of-instance-a")
	second := b.newPod("second")
	got2 := b.addOn(b.runtimeWithCache(nil), second)
	wantAddressIn(t, got2, bSubnet, aAddrs)
	if got2 == got {
		t.Errorf("the second pod got %s, the running first pod's", got2)
	}
	held := b.assignmentsByKey()
	if held[first.id+"/eth0"].IP != got || held[second.id+"/eth0"].IP != got2 {
		t.Errorf("after the second set-aside: first %s (want %s), second %s (want %s)",
			held[first.id+"/eth0"].IP, got, held[second.id+"/eth0"].IP, got2)
	}
	b.wantEvent("identity-changed", aID, bID, "")
	for _, e := range aENIs {
		if calls := b.sim.ENICalls(e.ID); calls != nil {
			t.Errorf("B's EC2 saw calls naming A's ENI %s: %v", e.ID, calls)
		}
	}
}

// A reboot of the same instance: the file was confirmed under the previous
// kernel boot. STATUS stays ready (it asks IMDS itself, which says this is
// the instance) and records the new boot, so later calls trust the file
// without asking; pods keep starting from the node's pool.
func TestPrivilegedRebootOfTheSameInstanceStaysReady(t *testing.T) {
	w := newWorld(t, worldOpts{env: []string{"WARM_IP_TARGET=3"}})
	rt := w.runtime(conflist(w.conf(nil)))
	before := w.addOn(rt, w.newPod("before"))
	w.setNodeField("confirmedBoot", "the-boot-before-the-reboot")

	if err := rt.status(); err != nil {
		t.Fatalf("STATUS after a reboot of the same instance: %v", err)
	}
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Fatal(err)
	}
	if got := w.nodeField("confirmedBoot"); got != strings.TrimSpace(string(boot)) {
		t.Errorf("after STATUS confirmed the node the file records boot %q, want this boot %q", got, strings.TrimSpace(string(boot)))
	}
	after := w.addOn(rt, w.newPod("after"))
	if after == before || !netip.MustParsePrefix("100.64.0.0/20").Contains(after) {
		t.Errorf("the ADD after the reboot got %s (the first pod has %s)", after, before)
	}
}

// wantCNIError fails unless err is a CNI error of code whose message holds
// every want.
func wantCNIError(t *testing.T, what string, err error, code uint, want ...string) {
	t.Helper()
	var e *types.Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("%s: %v, want CNI code %d", what, err, code)
	}
	for _, w := range want {
		if !strings.Contains(e.Msg, w) {
			t.Errorf("%s: %q lacks %q", what, e.Msg, w)
		}
	}
}

// addOn adds p through rt and returns its IPv4 address.
func (w *world) addOn(rt *runtime, p *pod) netip.Addr {
	w.tb.Helper()
	res, err := rt.add(p, nil)
	if err != nil {
		w.tb.Fatalf("ADD %s: %v", p.id, err)
	}
	return netip.MustParsePrefix(res.IPs[0].Address.String()).Addr()
}

// wantAddressIn: ip is in subnet and none of others.
func wantAddressIn(t *testing.T, ip netip.Addr, subnet netip.Prefix, others map[netip.Addr]bool) {
	t.Helper()
	if others[ip] || !subnet.Contains(ip) {
		t.Errorf("a pod got %s: want an address of %s (the other instance's: %v)", ip, subnet, others[ip])
	}
}

// poolAddrs are every address the world's state holds.
func (w *world) poolAddrs() map[netip.Addr]bool {
	out := map[netip.Addr]bool{}
	w.view(func(tx *store.Tx) error {
		snap, err := tx.Snapshot()
		for _, e := range snap.ENIs {
			out[e.PrimaryIP] = true
			for _, b := range e.Blocks {
				for _, a := range b.Addrs {
					out[a.IP] = true
				}
			}
		}
		return err
	})
	return out
}

// copyState is the bytes of the world's state file.
func (w *world) copyState() []byte {
	w.tb.Helper()
	data, err := os.ReadFile(filepath.Join(w.stateDir, store.DBFile))
	if err != nil {
		w.tb.Fatal(err)
	}
	return data
}

// putState puts data in as the world's state file, as a copied state dir
// does, recording that boot confirmed its node (a file made on another
// machine names that machine's kernel boot).
func (w *world) putState(data []byte, boot string) {
	w.tb.Helper()
	if err := os.WriteFile(filepath.Join(w.stateDir, store.DBFile), data, 0o600); err != nil {
		w.tb.Fatal(err)
	}
	w.setNodeField("confirmedBoot", boot)
}

// setNodeField rewrites one field of the stored node record (by its JSON
// name).
func (w *world) setNodeField(key, value string) {
	w.tb.Helper()
	st, err := store.Open(w.stateDir, store.Options{})
	if err != nil {
		w.tb.Fatal(err)
	}
	err = st.Update(func(tx *store.Tx) error {
		n, _, err := tx.Node()
		if err != nil {
			return err
		}
		m := map[string]any{}
		if err := roundTrip(n, &m); err != nil {
			return err
		}
		m[key] = value
		if err := roundTrip(m, &n); err != nil {
			return err
		}
		return tx.PutNode(n)
	})
	if err != nil {
		w.tb.Fatal(err)
	}
}

// nodeField is one field of the stored node record, by its JSON name.
func (w *world) nodeField(key string) string {
	w.tb.Helper()
	m := map[string]any{}
	w.view(func(tx *store.Tx) error {
		n, _, err := tx.Node()
		if err != nil {
			return err
		}
		return roundTrip(n, &m)
	})
	s, _ := m[key].(string)
	return s
}

func roundTrip(from, to any) error {
	b, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, to)
}

// keptFile is the one state file set aside as instance id's: mode 0600.
func (w *world) keptFile(id string) string {
	w.tb.Helper()
	kept, _ := filepath.Glob(filepath.Join(w.stateDir, store.DBFile+"."+id+".*"))
	if len(kept) != 1 {
		entries, _ := os.ReadDir(w.stateDir)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		w.tb.Fatalf("state files kept as %s's: %v; the state dir holds %v", id, kept, names)
	}
	if fi, err := os.Stat(kept[0]); err != nil || fi.Mode().Perm() != 0o600 {
		w.tb.Errorf("%s: %v, mode %v, want 0600", kept[0], err, fi.Mode().Perm())
	}
	return kept[0]
}

// wantEvent finds an event of kind whose message holds every want.
func (w *world) wantEvent(kind string, want ...string) {
	w.tb.Helper()
	var events []store.Event
	w.view(func(tx *store.Tx) (err error) { events, err = tx.Events(0); return err })
	for _, e := range events {
		ok := e.Kind == kind
		for _, s := range want {
			ok = ok && strings.Contains(e.Message, s)
		}
		if ok {
			return
		}
	}
	w.tb.Errorf("no %s event saying %q in %+v", kind, want, events)
}
