package netns

import (
	"errors"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/vishvananda/netlink"

	"vpc-cni/internal/testsupport/testenv"
)

func listHost(t *testing.T, node ns.NetNS) (st HostState) {
	t.Helper()
	inNS(t, node, func() (err error) {
		st, err = ListHost()
		return err
	})
	return st
}

func teardown(t *testing.T, node ns.NetNS, p Pod) {
	t.Helper()
	inNS(t, node, func() error { return TeardownPod(p) })
}

func TestPrivilegedTeardownPodLeavesNothingAndIsIdempotent(t *testing.T) {
	cases := map[string]func(t *testing.T, node, podNS ns.NetNS, p Pod){
		"after setup, twice": func(t *testing.T, node, _ ns.NetNS, p Pod) {
			wirePod(t, node, p)
			teardown(t, node, p)
			teardown(t, node, p)
		},
		"without setup": func(t *testing.T, node, _ ns.NetNS, p Pod) {
			teardown(t, node, p)
		},
		"after the pod netns is deleted": func(t *testing.T, node, podNS ns.NetNS, p Pod) {
			wirePod(t, node, p)
			testenv.DeleteNetNS(podNS)
			teardown(t, node, p)
			teardown(t, node, p)
		},
		"with the host veth name unknown": func(t *testing.T, node, podNS ns.NetNS, p Pod) {
			wirePod(t, node, p)
			p.HostVeth = ""
			teardown(t, node, p) // the pod end goes, and its peer with it
		},
	}
	for name, run := range cases {
		t.Run(name, func(t *testing.T) {
			node := newNode(t)
			podNS, p := newPod(t, "down", "100.64.4.41", 3)
			run(t, node, podNS, p)
			if st := listHost(t, node); !reflect.DeepEqual(st, HostState{}) {
				t.Errorf("left on the node: %+v", st)
			}
			if NetnsExists(p.NetnsPath) {
				inNS(t, podNS, func() error {
					if l, err := netlink.LinkByName(p.IfName); err == nil {
						t.Errorf("pod interface %s still there", l.Attrs().Name)
					}
					return nil
				})
			}
		})
	}
}

func TestPrivilegedTeardownPodKeepsTheRulesOfAnAddressHandedToAnotherPod(t *testing.T) {
	node := newNode(t)
	oldNS, old := newPod(t, "old", "100.64.4.42", 3)
	_, cur := newPod(t, "new", "100.64.4.42", 3)
	wirePod(t, node, old)
	// The old sandbox's namespace goes (its veth with it) and the address is
	// given to the new pod; the old sandbox's DEL comes late.
	testenv.DeleteNetNS(oldNS)
	waitVethGone(t, node, old.HostVeth)
	wirePod(t, node, cur)
	teardown(t, node, old)
	inNS(t, node, func() error { return CheckPod(cur) })
}

func TestPrivilegedListHostAndRemoveLeftover(t *testing.T) {
	node := newNode(t)
	_, a := newPod(t, "a", "100.64.5.51", 0)
	_, b := newPod(t, "b", "100.64.5.52", 3)
	wirePod(t, node, a)
	wirePod(t, node, b)
	inNS(t, node, func() error {
		// Links gc must not take for pod veths: a non-eni veth, and a
		// non-veth named eni*.
		if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "cali1234", TxQLen: -1}, PeerName: "cali1234p"}); err != nil {
			return err
		}
		if err := netlink.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "enibridge", TxQLen: -1}}); err != nil {
			return err
		}
		// A pod veth whose other end stayed in the node: not Live.
		return netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "enihalf", TxQLen: -1}, PeerName: "halfpeer"})
	})
	vethA, vethB := a.HostVeth, b.HostVeth
	first, second := vethA, vethB
	if first > second {
		first, second = second, first
	}
	want := HostState{
		Veths: []string{first, second, "enihalf"},
		Rules: []RuleInfo{
			{PrioToPod, a.IP, MainTable}, {PrioToPod, b.IP, MainTable}, {PrioFromPod, b.IP, 3},
		},
		Routes: []RouteInfo{{a.IP, vethA}, {b.IP, vethB}},
		Live:   []string{first, second},
	}
	if got := listHost(t, node); !reflect.DeepEqual(got, want) {
		t.Fatalf("ListHost:\n got %+v\nwant %+v", got, want)
	}

	// A leak: pod A's veth vanished (its netns went) but DEL never came.
	inNS(t, node, func() error {
		l, err := netlink.LinkByName(vethA)
		if err != nil {
			return err
		}
		return netlink.LinkDel(l)
	})
	inNS(t, node, func() error { return RemoveLeftover("enihalf", netip.Addr{}) })
	want = HostState{
		Veths:  []string{vethB},
		Rules:  want.Rules,
		Routes: []RouteInfo{{b.IP, vethB}},
		Live:   []string{vethB},
	}
	if got := listHost(t, node); !reflect.DeepEqual(got, want) {
		t.Fatalf("ListHost after the leak:\n got %+v\nwant %+v", got, want)
	}

	inNS(t, node, func() error { return RemoveLeftover("", a.IP) })
	want.Rules = want.Rules[1:]
	if got := listHost(t, node); !reflect.DeepEqual(got, want) {
		t.Fatalf("ListHost after RemoveLeftover of %s:\n got %+v\nwant %+v", a.IP, got, want)
	}

	inNS(t, node, func() error { return RemoveLeftover("", b.IP) }) // still routed: kept
	if got := listHost(t, node); !reflect.DeepEqual(got, want) {
		t.Fatalf("RemoveLeftover removed the rules of %s, still routed to %s: %+v", b.IP, vethB, got)
	}

	inNS(t, node, func() error { return RemoveLeftover(vethB, b.IP) })
	inNS(t, node, func() error { return RemoveLeftover(vethB, b.IP) })
	if got := listHost(t, node); !reflect.DeepEqual(got, HostState{}) {
		t.Fatalf("ListHost after removing everything: %+v", got)
	}
}

func TestPrivilegedRemoveLeftoverRefusesALinkThatIsNotAVeth(t *testing.T) {
	node := newNode(t)
	inNS(t, node, func() error {
		return netlink.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "eninotveth", TxQLen: -1}})
	})
	var err error
	inNS(t, node, func() error { err = RemoveLeftover("eninotveth", netip.Addr{}); return nil })
	if err == nil {
		t.Fatal("RemoveLeftover deleted a bridge")
	}
}

func TestPrivilegedNetnsExists(t *testing.T) {
	n := testenv.NewNetNS(t)
	if !NetnsExists(n.Path()) {
		t.Errorf("NetnsExists(%s) = false for a live netns", n.Path())
	}
	path := n.Path()
	testenv.DeleteNetNS(n)
	for _, p := range []string{path, "", "/nonexistent/netns", t.TempDir()} {
		if NetnsExists(p) {
			t.Errorf("NetnsExists(%q) = true", p)
		}
	}
}

// waitVethGone waits until the kernel has destroyed veth (a namespace's
// deletion takes its veths with it, asynchronously).
func waitVethGone(t *testing.T, node ns.NetNS, veth string) {
	t.Helper()
	for range 500 {
		gone := false
		inNS(t, node, func() error {
			_, err := netlink.LinkByName(veth)
			gone = err != nil
			return nil
		})
		if gone {
			return
		}
		time.Sleep(10 * time.Millisecond) // polling a condition: the kernel's cleanup has no event to wait on here
	}
	t.Fatalf("%s still there 5 s after its peer's namespace was deleted", veth)
}

// The point-of-use guard: an address the node routes to a live pod's veth
// is not wired for another pod, whatever the caller says, and the running
// pod's wiring is untouched.
func TestPrivilegedSetupPodRefusesAnAddressALivePodHolds(t *testing.T) {
	node := newNode(t)
	_, running := newPod(t, "running", "100.64.4.43", 3)
	_, second := newPod(t, "second", "100.64.4.43", 3)
	wirePod(t, node, running)
	inNS(t, node, func() error {
		_, err := SetupPod(second)
		var e *InUseError
		if !errors.As(err, &e) || e.Veth != running.HostVeth {
			t.Fatalf("SetupPod of a live pod's address: %v, want InUseError naming %s", err, running.HostVeth)
		}
		if _, err := netlink.LinkByName(second.HostVeth); err == nil {
			t.Errorf("the refused pod's veth %s was made", second.HostVeth)
		}
		return CheckPod(running)
	})
}
