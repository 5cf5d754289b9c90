package podgc

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"vpc-cni/netns"
	"vpc-cni/pool"
	"vpc-cni/store"
)

// fakeHost records what gc removes; the kernel side is tested in netns/.
type fakeHost struct {
	state     netns.HostState
	netnses   map[string]bool
	torn      []string
	leftovers []string
}

func (f *fakeHost) ListHost() (netns.HostState, error) { return f.state, nil }
func (f *fakeHost) NetnsExists(p string) bool          { return f.netnses[p] }
func (f *fakeHost) TeardownPod(p netns.Pod) error {
	f.torn = append(f.torn, p.HostVeth)
	return nil
}
func (f *fakeHost) RemoveLeftover(veth string, ip netip.Addr) error {
	f.leftovers = append(f.leftovers, veth+"|"+ip.String())
	return nil
}

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// newPool is a store with one ready ENI holding 100.64.0.10-13.
func newPool(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.OpenNew(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := pool.ENI{ID: "eni-1", DeviceIndex: 0, Ready: true, PrimaryIP: netip.MustParseAddr("100.64.0.4")}
	for _, ip := range []string{"100.64.0.10", "100.64.0.11", "100.64.0.12"} {
		a := netip.MustParseAddr(ip)
		e.Blocks = append(e.Blocks, pool.Block{CIDR: netip.PrefixFrom(a, 32),
			Addrs: []pool.Addr{{IP: a, State: pool.Free, Since: now}}})
	}
	if err := st.Update(func(tx *store.Tx) error { return tx.PutENI(e) }); err != nil {
		t.Fatal(err)
	}
	return st
}

func take(t *testing.T, st *store.Store, key, netnsPath, veth string) store.Assignment {
	t.Helper()
	var a store.Assignment
	err := st.Update(func(tx *store.Tx) (err error) {
		a, err = tx.Take(store.Assignment{Key: key, ContainerID: key[:2], IfName: "eth0", Netns: netnsPath, HostVeth: veth}, now, pool.Config{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func assignmentKeys(t *testing.T, st *store.Store) []string {
	t.Helper()
	var keys []string
	err := st.View(func(tx *store.Tx) error {
		all, err := tx.Assignments()
		for _, a := range all {
			keys = append(keys, a.Key)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

func TestReleasesAssignmentsWhoseNetnsIsGone(t *testing.T) {
	st := newPool(t)
	take(t, st, "c1/eth0", "/run/netns/live", "eniaaaa")
	take(t, st, "c2/eth0", "/run/netns/gone", "enibbbb")
	host := &fakeHost{netnses: map[string]bool{"/run/netns/live": true},
		state: netns.HostState{Veths: []string{"eniaaaa", "enibbbb"}}}

	rep, err := Run(st, host, false, now)
	if err != nil {
		t.Fatal(err)
	}
	if got := assignmentKeys(t, st); !slices.Equal(got, []string{"c1/eth0"}) {
		t.Fatalf("assignments left = %v, want only c1/eth0", got)
	}
	if !slices.Equal(host.torn, []string{"enibbbb"}) || len(rep.Released) != 1 {
		t.Fatalf("torn down %v, report %+v", host.torn, rep)
	}
}

func TestRemovesWiringNoAssignmentOwns(t *testing.T) {
	st := newPool(t)
	a := take(t, st, "c1/eth0", "", "eniaaaa")
	stray := netip.MustParseAddr("100.64.0.99")
	host := &fakeHost{state: netns.HostState{
		Veths:  []string{"eniaaaa", "eniorphan"},
		Routes: []netns.RouteInfo{{IP: a.IP, Veth: "eniaaaa"}, {IP: stray, Veth: "eniorphan"}},
		Rules:  []netns.RuleInfo{{Priority: 512, IP: a.IP, Table: 254}, {Priority: 512, IP: stray, Table: 254}},
	}}
	if _, err := Run(st, host, false, now); err != nil {
		t.Fatal(err)
	}
	want := []string{"eniorphan|invalid IP", "|100.64.0.99"}
	if !slices.Equal(host.leftovers, want) {
		t.Fatalf("removed %v, want %v (the live pod's wiring kept)", host.leftovers, want)
	}
}

func TestDryRunChangesNothing(t *testing.T) {
	st := newPool(t)
	take(t, st, "c1/eth0", "/run/netns/gone", "eniaaaa")
	host := &fakeHost{state: netns.HostState{Veths: []string{"eniaaaa", "eniorphan"}}}
	rep, err := Run(st, host, true, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Released) != 1 || len(rep.Leftovers) != 2 {
		t.Fatalf("report %+v: want one release and two leftovers listed", rep)
	}
	if len(host.torn)+len(host.leftovers) != 0 || len(assignmentKeys(t, st)) != 1 {
		t.Fatal("dry run changed something")
	}
}

// A lost state file: the store has no assignment for a running pod, but its
// veth leads into a live namespace. gc keeps the veth, its route and rules,
// and lists them; only wiring whose namespace is gone is garbage.
func TestKeepsWiringIntoLiveNamespaces(t *testing.T) {
	st := newPool(t)
	running, dead := netip.MustParseAddr("100.64.0.10"), netip.MustParseAddr("100.64.0.11")
	host := &fakeHost{state: netns.HostState{
		Veths:  []string{"enidead", "enirunning"},
		Live:   []string{"enirunning"},
		Routes: []netns.RouteInfo{{IP: dead, Veth: "enidead"}, {IP: running, Veth: "enirunning"}},
		Rules:  []netns.RuleInfo{{Priority: 512, IP: dead, Table: 254}, {Priority: 512, IP: running, Table: 254}},
	}}
	rep, err := Run(st, host, false, now)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"enidead|invalid IP", "|100.64.0.11"}
	if !slices.Equal(host.leftovers, want) {
		t.Fatalf("removed %v, want %v (the running pod's wiring kept)", host.leftovers, want)
	}
	if len(rep.Unowned) != 1 || len(rep.Leftovers) != 2 {
		t.Fatalf("report %+v: want the running pod's veth listed as unowned, two leftovers", rep)
	}
	if got := LivePods(host.state); len(got) != 1 || got[0].IP != running {
		t.Fatalf("LivePods = %v, want only %s", got, running)
	}
}

// DEL leaves a pod's veth pair to its namespace's deletion. gc removes one
// whose namespace no path names (an orphan), and keeps, without reporting
// it as a running pod's, one whose namespace lives on (the runtime may ADD
// in it again, which makes the pair afresh).
func TestRemovesOrphanVethsAndKeepsDetachedOnes(t *testing.T) {
	st := newPool(t)
	host := &fakeHost{state: netns.HostState{
		Veths:   []string{"enidetached", "eniorphan"},
		Live:    []string{"enidetached", "eniorphan"},
		Orphans: []string{"eniorphan"},
	}}
	rep, err := Run(st, host, false, now)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"eniorphan|invalid IP"}; !slices.Equal(host.leftovers, want) {
		t.Fatalf("removed %v, want %v", host.leftovers, want)
	}
	if len(rep.Unowned) != 0 || len(rep.Leftovers) != 1 {
		t.Fatalf("report %+v: want one leftover (the orphan) and nothing unowned", rep)
	}
}
