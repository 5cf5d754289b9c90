package reconcile

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"vpc-cni/pool"
	"vpc-cni/sim/ec2sim"
	"vpc-cni/store"
)

// smallNode is a t3.medium whose profile gold has two /28 subnets of its
// own (11 free addresses each) and WARM_IP_TARGET=2.
func smallNode(t *testing.T) (n *node, a, b string) {
	n = newNode(t, "t3.medium", env{"PROFILE_GOLD_WARM_IP_TARGET": "2"})
	var err error
	if a, err = n.sim.AddSubnet(netip.MustParsePrefix("100.64.96.0/28"), "", nil); err != nil {
		t.Fatal(err)
	}
	if b, err = n.sim.AddSubnet(netip.MustParsePrefix("100.64.96.16/28"), "", nil); err != nil {
		t.Fatal(err)
	}
	n.env["PROFILE_GOLD_SUBNETS"] = a + "," + b
	n.r.Names = n.env.names
	return n, a, b
}

// fillSubnet takes every free address of the subnet, as other tenants'
// ENIs would (no call of the node's counts).
func fillSubnet(t *testing.T, n *node, id string) {
	t.Helper()
	for free := n.sim.SubnetFreeOf(id); free > 0; free = n.sim.SubnetFreeOf(id) {
		if _, err := n.sim.AddENI(ec2sim.ENISpec{SubnetID: id, Secondary: min(free-1, 5), Detached: true}); err != nil {
			t.Fatal(err)
		}
	}
}

// takeGold gives k gold pods an address each.
func takeGold(t *testing.T, n *node, k int) {
	t.Helper()
	for range k {
		n.pods++
		err := n.st.Update(func(tx *store.Tx) error {
			_, err := tx.Take(store.Assignment{Key: fmt.Sprintf("gold/%d", n.pods)}, n.clock.Now(), pool.Config{Cooldown: n.cooldown(), Profile: "gold"})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// growthCalls counts the calls a pass makes to grow a pool.
func growthCalls(c map[string]int) int {
	return c["DescribeSubnets"] + c["CreateNetworkInterface"] + c["AssignPrivateIpAddresses"]
}

// A profile whose every subnet is full, found so by placement or by EC2's
// refusal, backs off its own pool: the next passes ask EC2 nothing for it
// until the back-off ends, the default pool grows on.
func TestAProfileWithEverySubnetFullBacksOffAlone(t *testing.T) {
	for _, when := range []string{"before its first ENI", "after its first ENI"} {
		t.Run(strings.ReplaceAll(when, " ", "-"), func(t *testing.T) {
			n, a, b := smallNode(t)
			if when == "after its first ENI" {
				n.converge(5)
				takeGold(t, n, 2)
			}
			fillSubnet(t, n, a)
			fillSubnet(t, n, b)
			n.r.Run(ctxFor(t), Options{}) // fails, or ends in a grow-only round of the default pool
			wantGoldBackedOff(t, n)
			n.clock.Advance(time.Minute)
			for range 2 {
				n.sim.ResetCounters()
				rep, err := n.r.Run(ctxFor(t), Options{})
				if c := n.sim.Counters(); err != nil || growthCalls(c) != 0 {
					t.Fatalf("a pass within gold's back-off: err %v, calls %v", err, c)
				}
				for _, act := range rep.Plan.Actions {
					if act.Profile == "gold" {
						t.Fatalf("a pass within gold's back-off plans %+v", act)
					}
				}
			}
			n.clock.Advance(2 * time.Minute)
			n.sim.ResetCounters()
			if _, err := n.r.Run(ctxFor(t), Options{}); growthCalls(n.sim.Counters()) == 0 {
				t.Fatalf("after the back-off gold does not try again: err %v, calls %v", err, n.sim.Counters())
			}
			wantGoldBackedOff(t, n)
			wantDefaultGrows(t, n)
			wantGoldBackedOff(t, n)
		})
	}
}

// wantGoldBackedOff fails unless gold's pool alone is backed off, with why
// in its timers and in the events.
func wantGoldBackedOff(t *testing.T, n *node) {
	t.Helper()
	snap := n.snapshot()
	gold := pool.TimersOf(snap, "gold")
	if !gold.GrowBlockedUntil.After(n.clock.Now()) || !strings.Contains(gold.GrowBlockedWhy, "profile gold") {
		t.Fatalf("gold not backed off: %+v", gold)
	}
	if !snap.GrowBlockedUntil.IsZero() {
		t.Fatalf("the default pool is backed off too: %s", snap.GrowBlockedWhy)
	}
	var events []store.Event
	if err := n.st.View(func(tx *store.Tx) (err error) { events, err = tx.Events(0); return err }); err != nil {
		t.Fatal(err)
	}
	if !hasEvent(events, "subnet-full", "profile gold backs off until") {
		t.Fatalf("no event says gold backs off: %+v", events)
	}
}

// wantDefaultGrows takes the default pool's free addresses and checks that
// the next pass grows it.
func wantDefaultGrows(t *testing.T, n *node) {
	t.Helper()
	for {
		if _, err := n.addPod(); err != nil {
			break
		}
	}
	n.sim.ResetCounters()
	rep := n.pass()
	grown := 0
	for _, act := range rep.Plan.Actions {
		if act.Profile == "gold" {
			t.Fatalf("gold's growth planned within its back-off: %+v", act)
		}
		grown++
	}
	if grown == 0 || mutating(n.sim.Counters()) == 0 {
		t.Fatalf("the default pool did not grow: plan %+v, calls %v", rep.Plan.Actions, n.sim.Counters())
	}
	if _, err := n.addPod(); err != nil {
		t.Fatalf("no default address after the pass: %v", err)
	}
}

// A profile refused by one of its two subnets goes on in the other in the
// same pass (a grow-only round, as subnet discovery does), without backing
// off, though the default pool has no other subnet.
func TestAProfileWithOneSubnetFullGrowsInTheOther(t *testing.T) {
	n, a, b := smallNode(t)
	n.env["ENABLE_SUBNET_DISCOVERY"] = "false" // the default pool has nowhere else: only gold's subnets may serve
	n.converge(5)
	if e := profileENIs(n, "gold"); len(e) != 1 || e[0].SubnetID != a && e[0].SubnetID != b {
		t.Fatalf("gold's ENIs %+v", e)
	}
	full, other := a, b
	if profileENIs(n, "gold")[0].SubnetID == b {
		full, other = b, a
	}
	fillSubnet(t, n, full)
	takeGold(t, n, 2)
	n.sim.ResetCounters()
	n.r.Run(ctxFor(t), Options{}) // the assign is refused: a grow-only round follows
	if gold := pool.TimersOf(n.snapshot(), "gold"); !gold.GrowBlockedUntil.IsZero() {
		t.Fatalf("gold backed off though %s has room: %s", other, gold.GrowBlockedWhy)
	}
	c := n.sim.Counters()
	var in []string
	for _, e := range profileENIs(n, "gold") {
		in = append(in, e.SubnetID)
	}
	if c["AssignPrivateIpAddresses"] != 1 || c["CreateNetworkInterface"] != 1 || len(in) != 2 || in[1] != other && in[0] != other {
		t.Fatalf("gold's ENIs are in %v after the pass (calls %v), want a new one in %s", in, c, other)
	}
	takeGold(t, n, 2)
	if rep := n.pass(); len(rep.Failed) > 0 {
		t.Fatalf("the next pass: %v", rep.Failed)
	}
}
