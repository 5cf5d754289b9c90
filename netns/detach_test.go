package netns

import (
	"net/netip"
	"os"
	"reflect"
	"slices"
	"testing"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"vpc-cni/internal/testsupport/testenv"
)

func detach(t *testing.T, node ns.NetNS, p Pod) {
	t.Helper()
	inNS(t, node, func() error { return DetachPod(p) })
}

// hostNeighbours are the node's IPv6 neighbour entries for ip (on any link).
func hostNeighbours(t *testing.T, node ns.NetNS, ip netip.Addr) (n int) {
	t.Helper()
	inNS(t, node, func() error {
		neighs, err := netlink.NeighList(0, unix.AF_INET6)
		for _, e := range neighs {
			if got, _ := netip.AddrFromSlice(e.IP); got == ip {
				n++
			}
		}
		return err
	})
	return n
}

// DEL (DetachPod) removes at once what routes to the pod; the runtime's
// deletion of the namespace then takes the veth pair, and nothing is left.
func TestPrivilegedDetachPodThenNamespaceDeletionLeavesNothing(t *testing.T) {
	cases := map[string]func(t *testing.T) (ns.NetNS, ns.NetNS, Pod){
		"IPv4": func(t *testing.T) (ns.NetNS, ns.NetNS, Pod) {
			podNS, p := newPod(t, "detach4", "100.64.4.61", 3)
			return newNode(t), podNS, p
		},
		"dual-stack": func(t *testing.T) (ns.NetNS, ns.NetNS, Pod) {
			podNS, p := newPod6(t, "detach46", "100.64.4.62", "fd00:64::4:62")
			return newNode6(t), podNS, p
		},
	}
	for name, setup := range cases {
		t.Run(name, func(t *testing.T) {
			node, podNS, p := setup(t)
			wirePod(t, node, p)
			detach(t, node, p)
			detach(t, node, p) // idempotent
			st := listHost(t, node)
			if len(st.Routes)+len(st.Rules) != 0 {
				t.Fatalf("routes or rules left after DEL: %+v", st)
			}
			if n := hostNeighbours(t, node, p.IP6); p.IP6.IsValid() && n != 0 {
				t.Fatalf("%d host neighbours of %s left after DEL", n, p.IP6)
			}
			if !slices.Contains(st.Live, p.HostVeth) || slices.Contains(st.Orphans, p.HostVeth) {
				t.Fatalf("the pair into a named namespace should be left to the runtime: %+v", st)
			}
			testenv.DeleteNetNS(podNS) // the runtime's StopPodSandbox
			waitVethGone(t, node, p.HostVeth)
			if st := listHost(t, node); !reflect.DeepEqual(st, HostState{}) {
				t.Fatalf("left on the node after the namespace went: %+v", st)
			}
		})
	}
}

// A namespace that lives on after DEL (a runtime that retries ADD in it):
// the next ADD makes the pair afresh and the pod is reachable.
func TestPrivilegedAddAfterDetachInTheSurvivingNamespace(t *testing.T) {
	node := newNode(t)
	podNS, p := newPod(t, "again", "100.64.4.63", 3)
	wirePod(t, node, p)
	detach(t, node, p)
	p.IP, p.Table = netip.MustParseAddr("100.64.4.64"), 0 // another address, another ENI
	wirePod(t, node, p)
	inNS(t, node, func() error { return CheckPod(p) })
	if err := ping(node, p.IP); err != nil {
		t.Fatalf("node to the re-added pod: %v", err)
	}
	if err := ping(podNS, nodePrimaryIP); err != nil {
		t.Fatalf("re-added pod to the node: %v", err)
	}
	st := listHost(t, node)
	want := []RuleInfo{{PrioToPod, p.IP, MainTable}}
	if !reflect.DeepEqual(st.Rules, want) || len(st.Routes) != 1 || len(st.Orphans) != 0 {
		t.Fatalf("after ADD, DEL, ADD: %+v, want only the new address's rule and route", st)
	}
}

// A DELeted pod's pair whose namespace no path names any more (held by a
// descriptor only) is an orphan; a running pod's, or one whose namespace is
// still mounted, is not.
func TestPrivilegedListHostFindsVethsIntoNamespacesNoPathNames(t *testing.T) {
	node := newNode(t)
	goneNS, gone := newPod(t, "gone", "100.64.4.65", 3)
	_, kept := newPod(t, "kept", "100.64.4.66", 3)
	_, running := newPod(t, "running", "100.64.4.67", 3)
	for _, p := range []Pod{gone, kept, running} {
		wirePod(t, node, p)
	}
	detach(t, node, gone)
	detach(t, node, kept)
	held, err := ns.GetNS(goneNS.Path()) // keeps the namespace alive without a name
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	_ = goneNS.Close()
	if err := unix.Unmount(goneNS.Path(), unix.MNT_DETACH); err != nil { // the open descriptor keeps it busy
		t.Fatal(err)
	}
	_ = os.Remove(goneNS.Path())
	st := listHost(t, node)
	if !slices.Equal(st.Orphans, []string{gone.HostVeth}) {
		t.Fatalf("Orphans = %v, want only %s (live: %v)", st.Orphans, gone.HostVeth, st.Live)
	}
	inNS(t, node, func() error { return RemoveLeftover(gone.HostVeth, netip.Addr{}) })
	if st := listHost(t, node); slices.Contains(st.Veths, gone.HostVeth) || len(st.Orphans) != 0 {
		t.Fatalf("the orphan is still there: %+v", st)
	}
}

// A DEL that knows no address (no assignment, no prevResult) detaches what
// the kernel routes through its host veth and egress veth when they lead
// into its namespace, both families; a veth of the same name (the same pod's
// newer sandbox) that leads into another namespace keeps its wiring.
func TestPrivilegedDetachPodWithNoAddressDetachesOnlyItsOwnSandbox(t *testing.T) {
	node := newNode6(t)
	podNS, p := newPod6(t, "unknown", "", "fd00:64::4:71")
	p.Egress = &Egress{IP: netip.MustParseAddr("169.254.172.9")}
	otherNS, _ := newPod(t, "elsewhere", "100.64.4.72", 0)
	wirePod(t, node, p)

	unknown := Pod{NetnsPath: otherNS.Path(), IfName: p.IfName, HostVeth: p.HostVeth}
	detach(t, node, unknown)
	if st := listHost(t, node); len(st.Routes) != 1 || len(st.Rules) != 1 {
		t.Fatalf("a DEL from another namespace detached %s's wiring: %+v", p.HostVeth, st)
	}
	inNS(t, node, func() error { return CheckPod(p) })

	unknown.NetnsPath = podNS.Path()
	detach(t, node, unknown)
	if st := listHost(t, node); len(st.Routes)+len(st.Rules) != 0 {
		t.Fatalf("routes or rules left after a DEL that knew no address: %+v", st)
	}
	if n := hostNeighbours(t, node, p.IP6); n != 0 {
		t.Fatalf("%d host neighbours of %s left", n, p.IP6)
	}
	if ips := routesThrough(t, node, EgressVethName(p.HostVeth)); len(ips) != 0 {
		t.Fatalf("egress routes left through %s: %v", EgressVethName(p.HostVeth), ips)
	}
}

// routesThrough are the main table's host routes through the link called name.
func routesThrough(t *testing.T, node ns.NetNS, name string) (out []netip.Addr) {
	t.Helper()
	inNS(t, node, func() error {
		l, err := netlink.LinkByName(name)
		if err != nil {
			return err
		}
		for _, family := range []int{unix.AF_INET, unix.AF_INET6} {
			routes, err := netlink.RouteList(l, family)
			if err != nil {
				return err
			}
			for _, r := range routes {
				if ip, ok := addrOfHost(r.Dst); ok {
					out = append(out, ip)
				}
			}
		}
		return nil
	})
	return out
}
