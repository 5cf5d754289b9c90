package plugin

import (
	"net/netip"
	"testing"
	"time"

	"github.com/containernetworking/cni/pkg/types"

	"vpc-cni/netns"
	"vpc-cni/pool"
	"vpc-cni/settings"
	"vpc-cni/store"
)

func (n *testNode) status(extra map[string]any) error {
	_, err := n.run("STATUS", n.args("", n.conf("1.1.0", extra)))
	return err
}

var growOn = map[string]any{"inlineGrow": true}

func TestStatusIsReadyWhileAnAddressIsFree(t *testing.T) {
	n := newTestNode(t).seed(pool.Limits{MaxENIs: 1, IPv4PerENI: 3}, eni(0, "100.64.0.10", "100.64.0.11"))
	n.add("c1")
	if err := n.status(nil); err != nil {
		t.Fatal(err)
	}
}

func TestStatusBeforeTheFirstReconcileIsNotAvailable(t *testing.T) {
	n := newTestNode(t)
	wantCode(t, n.status(nil), types.ErrPluginNotAvailable, "has not been reconciled yet")
	n.update(func(tx *store.Tx) error { return tx.PutENI(eni(0, "100.64.0.10")) }) // a pool, but no node yet
	wantCode(t, n.status(nil), types.ErrPluginNotAvailable, "has not been reconciled yet")
}

// With the pool empty, STATUS is ready only if the grow an ADD starts could
// get an address.
func TestStatusWithAnEmptyPoolAsksWhetherItCanGrow(t *testing.T) {
	n := newTestNode(t).seed(pool.Limits{MaxENIs: 2, IPv4PerENI: 3}, eni(0, "100.64.0.10"))
	n.add("c1")
	wantCode(t, n.status(nil), types.ErrPluginNotAvailable, "no free address and inline grow is off")
	if err := n.status(growOn); err != nil {
		t.Fatalf("room for a second address on the primary ENI: %v", err)
	}
}

func TestStatusIsNotAvailableWhenNoAddressCanBeHad(t *testing.T) {
	// One ENI of 3 addresses (its own and two for pods), both taken or cooling.
	n := newTestNode(t).seed(pool.Limits{MaxENIs: 1, IPv4PerENI: 3}, eni(0, "100.64.0.10", "100.64.0.11"))
	n.add("c1")
	n.add("c2")
	if _, err := n.run("DEL", n.args("c2", n.conf("1.1.0", nil))); err != nil {
		t.Fatal(err)
	}
	wantCode(t, n.status(growOn), types.ErrPluginNotAvailable,
		"no free address and none can be had: 1 assigned, 1 cooling, 1 of 1 ENI, max pods 4")
}

func TestStatusNamesTheSubnetBackOff(t *testing.T) {
	n := newTestNode(t).seed(pool.Limits{MaxENIs: 2, IPv4PerENI: 3}, eni(0, "100.64.0.10"))
	n.add("c1")
	until := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	n.update(func(tx *store.Tx) error {
		return tx.PutPoolMeta(time.Time{}, until, "InsufficientFreeAddressesInSubnet")
	})
	wantCode(t, n.status(growOn), types.ErrPluginNotAvailable,
		"growth blocked until "+until.Format(time.RFC3339)+": InsufficientFreeAddressesInSubnet")
}

// The cooldown STATUS applies is the configured one (here kubelet's
// environment), as for ADD.
func TestStatusUsesTheConfiguredCooldown(t *testing.T) {
	n := newTestNode(t).seed(pool.Limits{MaxENIs: 1, IPv4PerENI: 2}, eni(0, "100.64.0.10"))
	n.add("c1")
	if _, err := n.run("DEL", n.args("c1", n.conf("1.1.0", nil))); err != nil {
		t.Fatal(err)
	}
	wantCode(t, n.status(growOn), types.ErrPluginNotAvailable, "1 cooling")
	t.Setenv(settings.Cooldown, "0")
	if err := n.status(growOn); err != nil {
		t.Fatalf("with no cooldown the cooling address is free: %v", err)
	}
}

// running is the kernel of a node with two running pods' wiring (veths
// into live namespaces, their routes) and one dead pod's leftover veth.
var running = netns.HostState{
	Veths:  []string{"enia", "enib", "enidead"},
	Live:   []string{"enia", "enib"},
	Routes: []netns.RouteInfo{{IP: netip.MustParseAddr("100.64.0.20"), Veth: "enia"}, {IP: netip.MustParseAddr("100.64.0.21"), Veth: "enib"}},
}

func TestStatusOnALostStateFileSaysSo(t *testing.T) {
	n := newTestNode(t)
	n.host.wiring = running
	wantCode(t, n.status(nil), types.ErrPluginNotAvailable, "state lost: 2 running pods' wiring found with no state; run `vpcctl state rebuild`")
}
