package plugin

import (
	"net/netip"
	"testing"
	"time"

	"github.com/containernetworking/cni/pkg/types"

	"vpc-cni/netns"
	"vpc-cni/pool"
	"vpc-cni/reconcile"
	"vpc-cni/store"
)

func TestDelTearsDownAndReleasesIntoCooling(t *testing.T) {
	n := newTestNode(t).seed(twoENIs, eni(0), eni(1, "100.64.1.10", "100.64.1.11"))
	ip := n.add("c1")
	out, err := n.run("DEL", n.args("c1", n.conf("1.1.0", nil)))
	if err != nil || out != "" {
		t.Fatalf("DEL: %v, printed %q", err, out)
	}
	want := netns.Pod{NetnsPath: n.netns, IfName: "eth0", HostVeth: netns.HostVethNameFor("default", "c1", "c1"), IP: ip, Table: 2,
		Sandbox: netns.Sandbox{Network: "vpc", ContainerID: "c1", IfName: "eth0"}}
	if len(n.host.torn) != 1 || n.host.torn[0] != want || len(n.host.pods) != 0 {
		t.Fatalf("tore down %+v, want %+v", n.host.torn, want)
	}
	if _, ok := n.assignment("c1/eth0"); ok || n.state("100.64.1.10") != pool.Cooling || n.counter(CounterDels) != 1 {
		t.Fatalf("after DEL: .10 %s, dels %d", n.state("100.64.1.10"), n.counter(CounterDels))
	}
	// Cooling within the cooldown: the next pod gets another address.
	if next := n.add("c2"); next.String() != "100.64.1.11" {
		t.Fatalf("next ADD got %s, want .11 while .10 cools", next)
	}
}

// DEL succeeds when things are already gone, and still removes what the
// names (or the cached prevResult) point at.
func TestDelSucceedsWhenThingsAreAlreadyGone(t *testing.T) {
	n := newTestNode(t).seed(twoENIs, eni(0, "100.64.0.10"))
	n.add("c1")
	for i := range 2 {
		if _, err := n.run("DEL", n.args("c1", n.conf("1.1.0", nil))); err != nil {
			t.Fatalf("DEL #%d: %v", i+1, err)
		}
	}
	if n.counter(CounterDels) != 1 {
		t.Fatalf("two DELs counted %d releases", n.counter(CounterDels))
	}
	// Never added, namespace gone: the teardown goes by names and prevResult,
	// on the node side only.
	args := n.args("c9", n.conf("1.1.0", map[string]any{"prevResult": map[string]any{
		"cniVersion": "1.1.0", "ips": []any{map[string]any{"address": "100.64.0.99/32"}}}}))
	args.Netns = "/proc/nonexistent/ns/net"
	if _, err := n.run("DEL", args); err != nil {
		t.Fatalf("DEL without ADD: %v", err)
	}
	last := n.host.torn[len(n.host.torn)-1]
	want := netns.Pod{IfName: "eth0", HostVeth: netns.HostVethNameFor("default", "c9", "c9"), IP: netip.MustParseAddr("100.64.0.99"),
		Sandbox: netns.Sandbox{Network: "vpc", ContainerID: "c9", IfName: "eth0"}}
	if last != want {
		t.Fatalf("tore down %+v, want %+v", last, want)
	}
}

func TestDelOnANodeNeverReconciledSucceeds(t *testing.T) {
	n := newTestNode(t) // a store with no node and no pool
	if _, err := n.run("DEL", n.args("c1", n.conf("1.1.0", nil))); err != nil {
		t.Fatal(err)
	}
	if _, err := n.run("DEL", n.args("c1", n.ipamConf("1.1.0", nil))); err != nil {
		t.Fatalf("as delegate: %v", err)
	}
}

// A teardown that fails keeps the address: the runtime retries DEL, and the
// address must not go to another pod while it may still be routed here.
func TestDelKeepsTheAddressWhenTeardownFails(t *testing.T) {
	n := newTestNode(t).seed(twoENIs, eni(0, "100.64.0.10"))
	n.add("c1")
	n.host.fail["DetachPod"] = errKernel
	_, err := n.run("DEL", n.args("c1", n.conf("1.1.0", nil)))
	wantCode(t, err, types.ErrInternal, "tearing down c1/eth0")
	if _, ok := n.assignment("c1/eth0"); !ok || n.state("100.64.0.10") != pool.Assigned {
		t.Fatal("the address was released although the teardown failed")
	}
}

func TestDelAsIPAMDelegateClearsTheRules(t *testing.T) {
	n := newTestNode(t).seed(twoENIs, eni(0, "100.64.0.10"))
	if _, err := n.run("ADD", n.args("c1", n.ipamConf("1.1.0", nil))); err != nil {
		t.Fatal(err)
	}
	if _, err := n.run("DEL", n.args("c1", n.ipamConf("1.1.0", nil))); err != nil {
		t.Fatal(err)
	}
	if len(n.host.rules) != 0 || len(n.host.torn) != 0 || n.state("100.64.0.10") != pool.Cooling {
		t.Fatalf("after DEL: rules %v, teardowns %v, .10 %s", n.host.rules, n.host.torn, n.state("100.64.0.10"))
	}
}

func TestDelRefusesABadConfiguration(t *testing.T) {
	n := newTestNode(t).seed(twoENIs, eni(0, "100.64.0.10"))
	n.add("c1")
	_, err := n.run("DEL", n.args("c1", n.conf("1.1.0", map[string]any{"logLevel": "loud"})))
	wantCode(t, err, types.ErrInvalidNetworkConfig, "logLevel")
	if n.state("100.64.0.10") != pool.Assigned || len(n.host.torn) != 0 {
		t.Fatal("a refused DEL released the address")
	}
}

// A sandbox whose ADD was killed while it waited for an inline grow: its
// DEL drops the waiting entry, so growth and status stop counting a pod
// that will never come (they would until the dead ADD's deadline).
func TestDelDropsTheWaitingEntryOfAKilledADD(t *testing.T) {
	n := newTestNode(t).seed(twoENIs, eni(0))
	deadline := time.Now().Add(time.Minute)
	n.update(func(tx *store.Tx) error { return tx.PutWaiter("c1/eth0", pool.DefaultPool, deadline, time.Now()) })
	n.update(func(tx *store.Tx) error { return tx.PutWaiter("c2/eth0", pool.DefaultPool, deadline, time.Now()) })
	if _, err := n.run("DEL", n.args("c1", n.conf("1.1.0", nil))); err != nil {
		t.Fatalf("DEL: %v", err)
	}
	var waiting int
	var c1 bool
	n.update(func(tx *store.Tx) (err error) {
		c1 = tx.Waiter("c1/eth0")
		waiting, err = waitingDefault(tx)
		return err
	})
	if c1 || waiting != 1 {
		t.Fatalf("after DEL of c1: c1 still waiting %v, %d waiting; want c2's alone", c1, waiting)
	}
}

// A sandbox whose ADD was killed while it waited, whose address a rebuild
// (or another ADD's in-use guard) then kept as an unknown pod's on its host
// veth: its DEL releases that address and drops its own waiting entry too.
func TestDelOfAnUnknownHoldDropsItsWaitingEntry(t *testing.T) {
	n := newTestNode(t).seed(twoENIs, eni(0, "100.64.0.10", "100.64.0.11"))
	ip := n.add("other")
	veth := netns.HostVethName("default", "c1")
	n.update(func(tx *store.Tx) error {
		return reconcile.HoldInUse(tx, "other/eth0", &netns.InUseError{IP: ip, Veth: veth, Netns: n.netns}, time.Now())
	})
	n.update(func(tx *store.Tx) error {
		return tx.PutWaiter("c1/eth0", pool.DefaultPool, time.Now().Add(time.Minute), time.Now())
	})
	if _, err := n.run("DEL", n.args("c1", n.conf("1.1.0", nil))); err != nil {
		t.Fatalf("DEL: %v", err)
	}
	var waiting int
	n.update(func(tx *store.Tx) (err error) { waiting, err = waitingDefault(tx); return err })
	if s := n.state(ip.String()); s == pool.Assigned || waiting != 0 {
		t.Fatalf("after DEL of c1: %s is %v, %d waiting; want it released and none waiting", ip, s, waiting)
	}
}

// waitingDefault counts the ADDs waiting now for the default pool.
func waitingDefault(tx *store.Tx) (int, error) {
	by, err := tx.Waiting(time.Now())
	return by[pool.DefaultPool], err
}
