package rebuild

import (
	"net/netip"
	"testing"

	"vpc-cni/netns"
	"vpc-cni/pool"
	"vpc-cni/store"
)

func TestIsLostNeedsAFreshStoreAndRunningPods(t *testing.T) {
	ip := netip.MustParseAddr("100.64.0.20")
	live := netns.HostState{Veths: []string{"enia"}, Live: []string{"enia"}, Routes: []netns.RouteInfo{{IP: ip, Veth: "enia"}}}
	dead := netns.HostState{Veths: []string{"enia"}, Routes: []netns.RouteInfo{{IP: ip, Veth: "enia"}}}
	unrouted := netns.HostState{Veths: []string{"enia"}, Live: []string{"enia"}}
	for _, c := range []struct {
		name  string
		fresh bool
		hs    netns.HostState
		want  int
	}{
		{"a fresh store under a running pod is lost", true, live, 1},
		{"a store with a pool is never lost", false, live, 0},
		{"a new node has no pod wiring", true, netns.HostState{}, 0},
		{"a veth whose other end is in the node is a leftover", true, dead, 0},
		{"a veth with no /32 route carries no pod address", true, unrouted, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := IsLost(c.fresh, c.hs).Pods; got != c.want {
				t.Fatalf("IsLost = %d pods, want %d", got, c.want)
			}
		})
	}
}

// Detect reads the kernel only when the store holds no pool.
func TestDetectReadsTheKernelOnlyForAFreshStore(t *testing.T) {
	st, err := store.Open(t.TempDir(), store.Options{Lazy: true})
	if err != nil {
		t.Fatal(err)
	}
	reads := 0
	list := func() (netns.HostState, error) {
		reads++
		return netns.HostState{Live: []string{"enia"}, Routes: []netns.RouteInfo{{IP: netip.MustParseAddr("100.64.0.20"), Veth: "enia"}}}, nil
	}
	if lost, err := Detect(st, list); err != nil || lost.Pods != 1 || reads != 1 {
		t.Fatalf("missing file: lost %+v, err %v, %d kernel reads", lost, err, reads)
	}
	e := poolENI()
	unlock, _, err := st.LockReconcile(true, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Create(func(tx *store.Tx) error { return tx.PutENI(e) }); err != nil {
		t.Fatal(err)
	}
	unlock()
	if lost, err := Detect(st, list); err != nil || lost.Pods != 0 || reads != 1 {
		t.Fatalf("a store with a pool: lost %+v, err %v, %d kernel reads (want none more)", lost, err, reads)
	}
}

func poolENI() pool.ENI {
	a := netip.MustParseAddr("100.64.0.10")
	return pool.ENI{ID: "eni-1", Ready: true, PrimaryIP: netip.MustParseAddr("100.64.0.4"),
		Blocks: []pool.Block{{CIDR: netip.PrefixFrom(a, 32), Addrs: []pool.Addr{{IP: a, State: pool.Free}}}}}
}
