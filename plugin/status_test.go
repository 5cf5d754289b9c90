package plugin

import (
	"net/netip"
	"strings"
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

// A busy node is ready: with the pool empty and inline grow off, the next
// reconcile refills it, and the ADD meanwhile says so with code 11.
func TestStatusOfABusyNodeIsReady(t *testing.T) {
	n := newTestNode(t).seed(pool.Limits{MaxENIs: 2, IPv4PerENI: 3}, eni(0, "100.64.0.10"))
	n.add("c1")
	if err := n.status(nil); err != nil {
		t.Fatalf("an empty pool that can grow: %v", err)
	}
	_, err := n.run("ADD", n.args("c2", n.conf("1.1.0", nil)))
	wantCode(t, err, types.ErrTryAgainLater, "no free address in the pool; inline grow is off; the next reconcile refills the pool")
}

// fullNode is one ENI of 3 addresses (its own and two for pods), one taken
// and one cooling: no address free, and none can be had.
func fullNode(t *testing.T) *testNode {
	n := newTestNode(t).seed(pool.Limits{MaxENIs: 1, IPv4PerENI: 3}, eni(0, "100.64.0.10", "100.64.0.11"))
	n.add("c1")
	n.add("c2")
	if _, err := n.run("DEL", n.args("c2", n.conf("1.1.0", nil))); err != nil {
		t.Fatal(err)
	}
	return n
}

// A full node is load, not breakage: containerd 2.x would make a STATUS
// error a NotReady node and Kubernetes would evict every pod on it. STATUS
// answers success; the ADD fails with code 11 naming what is full and what
// frees an address, and the spell is one event.
func TestAFullNodeIsReadyAndItsADDSaysWhatIsFull(t *testing.T) {
	n := fullNode(t)
	for _, extra := range []map[string]any{nil, growOn} {
		if err := n.status(extra); err != nil {
			t.Fatalf("STATUS of a full node (%v): %v", extra, err)
		}
	}
	for _, id := range []string{"c3", "c4"} {
		_, err := n.run("ADD", n.args(id, n.conf("1.1.0", nil)))
		wantCode(t, err, types.ErrTryAgainLater, "no free address: the node is full: 1 ENI of 1 in use, every address held (1 assigned, 1 cooling); "+
			"1 cooling address is free again at ")
		wantCode(t, err, types.ErrTryAgainLater, "(IP_COOLDOWN_PERIOD); a pod's address is free again IP_COOLDOWN_PERIOD after the pod is deleted")
	}
	if got := n.counter(store.CounterAddsNodeFull); got != 2 {
		t.Fatalf("%s = %d, want 2", store.CounterAddsNodeFull, got)
	}
	t.Setenv(settings.Cooldown, "0")
	n.add("c5")
	wantEvents(t, n, "node-full: pod default/c3 got no address: the node is full",
		"node-not-full: an ADD got an address again, after 2 refused since ")
}

// wantEvents fails unless the store's events are exactly these, in order
// (each "kind: message" starting with the given text).
func wantEvents(t *testing.T, n *testNode, want ...string) {
	t.Helper()
	var got []store.Event
	n.update(func(tx *store.Tx) (err error) { got, err = tx.Events(0); return err })
	if len(got) != len(want) {
		t.Fatalf("events %+v, want %q", got, want)
	}
	for i, e := range got {
		if line := e.Kind + ": " + e.Message; !strings.HasPrefix(line, want[i]) {
			t.Fatalf("event %d is %q, want %q", i, line, want[i])
		}
	}
}

func TestStatusOfANodeWhoseSubnetIsFullIsReady(t *testing.T) {
	n := newTestNode(t).seed(pool.Limits{MaxENIs: 2, IPv4PerENI: 3}, eni(0, "100.64.0.10"))
	n.add("c1")
	until := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	n.update(func(tx *store.Tx) error {
		return tx.PutPoolTimers(pool.DefaultPool, pool.Timers{ExcessSince: time.Time{}, GrowBlockedUntil: until, GrowBlockedWhy: "InsufficientFreeAddressesInSubnet"})
	})
	if err := n.status(growOn); err != nil {
		t.Fatal(err)
	}
	_, err := n.run("ADD", n.args("c2", n.conf("1.1.0", growOn)))
	wantCode(t, err, types.ErrTryAgainLater, "the subnet has none to give: InsufficientFreeAddressesInSubnet (1 assigned, 0 cooling); "+
		"growth is tried again at "+until.Format(time.RFC3339))
}

// The cooldown the ADD applies is the configured one (here kubelet's
// environment).
func TestAFullNodesADDUsesTheConfiguredCooldown(t *testing.T) {
	n := newTestNode(t).seed(pool.Limits{MaxENIs: 1, IPv4PerENI: 2}, eni(0, "100.64.0.10"))
	n.add("c1")
	if _, err := n.run("DEL", n.args("c1", n.conf("1.1.0", nil))); err != nil {
		t.Fatal(err)
	}
	_, err := n.run("ADD", n.args("c2", n.conf("1.1.0", growOn)))
	wantCode(t, err, types.ErrTryAgainLater, "1 cooling")
	t.Setenv(settings.Cooldown, "0")
	n.add("c2")
}

// A node that holds no pod address and cannot get one has never served a
// pod (no pod of ours runs here to evict): it is not ready, and says why.
func TestStatusOfANodeThatCanNeverServeIsNotAvailable(t *testing.T) {
	n := newTestNode(t).seed(pool.Limits{MaxENIs: 3, IPv4PerENI: 4}, eni(0))
	t.Setenv(settings.IMDSOnlyMode, "true")
	wantCode(t, n.status(growOn), types.ErrPluginNotAvailable,
		"no pod address on the node and none can be had: no free address and the pool does not grow: ENABLE_IMDS_ONLY_MODE=true")
}

// An invalid configuration stops every ADD: that is the node's setup.
func TestStatusWithAnInvalidConfigurationIsNotAvailable(t *testing.T) {
	n := newTestNode(t).seed(pool.Limits{MaxENIs: 1, IPv4PerENI: 3}, eni(0, "100.64.0.10", "100.64.0.11"))
	t.Setenv(settings.WarmIPTarget, "abc")
	wantCode(t, n.status(nil), types.ErrPluginNotAvailable, `invalid network configuration: WARM_IP_TARGET="abc" (env): not an integer`)
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

// refusedPass records a last pass that failed for cause.
func refusedPass(n *testNode, cause, msg string) {
	n.update(func(tx *store.Tx) error {
		return tx.PutReconcileReport(store.ReconcileReport{Time: time.Now(), Error: msg, Cause: cause})
	})
}

const deniedCreate = "ec2:CreateNetworkInterface: not authorized to call ec2:CreateNetworkInterface (UnauthorizedOperation); " +
	"allow IAM action ec2:CreateNetworkInterface for the node's role or credentials"

// A node that holds no pod address and whose last pass EC2 refused for a
// cause the next pass meets again cannot start a pod, and says why; a
// passing trouble (a throttle) leaves it ready.
func TestStatusOfANodeThatHoldsNothingAndMayNotGrow(t *testing.T) {
	for _, c := range []struct{ cause, msg, want string }{
		{"unauthorized", deniedCreate, "(unauthorized, "},
		{"subnet-full", "ec2:CreateNetworkInterface: the subnet has no free addresses", "(subnet-full, "},
		{"limit", "ec2:AssignPrivateIpAddresses: PrivateIpAddressLimitExceeded", "(limit, "},
		{"throttled", "ec2:CreateNetworkInterface: throttled", ""},
		{"unreachable", "ec2: not reachable", ""},
	} {
		n := newTestNode(t).seed(pool.Limits{MaxENIs: 3, IPv4PerENI: 4}, eni(0))
		refusedPass(n, c.cause, c.msg)
		err := n.status(nil)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: STATUS %v, want success", c.cause, err)
			}
			continue
		}
		wantCode(t, err, types.ErrPluginNotAvailable, "no pod address on the node and none can be had: EC2 refused the last reconcile pass "+c.want)
		wantCode(t, err, types.ErrPluginNotAvailable, c.msg)
	}
}

// Capacity never fails STATUS on a node where a pod runs: an assigned
// address (here a profile pod's, outside the default pool) or a live pod's
// route the store does not know.
func TestStatusOfANodeWithRunningPodsWhoseGrowsAreRefusedIsReady(t *testing.T) {
	n := newTestNode(t).seed(pool.Limits{MaxENIs: 3, IPv4PerENI: 4}, eni(0))
	refusedPass(n, "unauthorized", deniedCreate)
	n.host.wiring = running
	if err := n.status(nil); err != nil {
		t.Fatalf("live pods' routes: %v", err)
	}
	t.Setenv(settings.IMDSOnlyMode, "true")
	if err := n.status(nil); err != nil {
		t.Fatalf("live pods' routes, no growth: %v", err)
	}
}

// IPv6-only pods need the /80, not IPv4 addresses: a refused IPv4 grow
// does not make such a node unavailable.
func TestStatusOfAnIPv6NodeIgnoresARefusedIPv4Grow(t *testing.T) {
	n := newTestNode(t).seed(pool.Limits{MaxENIs: 3, IPv4PerENI: 4}, eni(0))
	n.update(func(tx *store.Tx) error {
		return tx.PutIPv6Pool(store.IPv6Pool{Prefix: netip.MustParsePrefix("fd00:1::/80")})
	})
	refusedPass(n, "unauthorized", deniedCreate)
	t.Setenv(settings.EnableIPv6, "true")
	t.Setenv(settings.EnableIPv4, "false")
	t.Setenv(settings.PrefixDelegation, "true")
	if err := n.status(nil); err != nil {
		t.Fatalf("an IPv6 node with its /80: %v", err)
	}
}
