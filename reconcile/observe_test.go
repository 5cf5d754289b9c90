package reconcile

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"vpc-cni/cloud"
	"vpc-cni/pool"
	"vpc-cni/sim/ec2sim"
	"vpc-cni/store"
)

// ec2Only is the counters without IMDS's.
func ec2Only(counts map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range counts {
		if !strings.HasPrefix(k, "IMDS") {
			out[k] = v
		}
	}
	return out
}

func ec2Calls(counts map[string]int) int {
	n := 0
	for _, v := range ec2Only(counts) {
		n += v
	}
	return n
}

// lagNode is a node whose emulator runs on the test's clock and whose IMDS
// shows every change lag after EC2 made it.
func lagNode(t *testing.T, lag time.Duration, e env) *node {
	t.Helper()
	c := newClock()
	sim := startSimConfig(t, ec2sim.Config{InstanceType: "t3.small", Clock: c.Now})
	sim.SetFaults(ec2sim.Faults{IMDSLag: lag})
	n := attachNode(t, sim, t.TempDir(), e)
	n.clock, n.r.Now = c, c.Now
	return n
}

// settle runs passes until one plans nothing and IMDS shows what EC2 has.
func (n *node) settle(lag time.Duration) {
	n.t.Helper()
	n.converge(5)
	n.clock.Advance(lag)
	n.pass() // the last EC2 read the node needed, if any
}

// passObserving runs a pass and checks where it read the ENIs and how many
// times it asked EC2 for them.
func (n *node) passObserving(want string, describes int) *Report {
	n.t.Helper()
	n.sim.ResetCounters()
	rep := n.pass()
	got := n.sim.Counters()
	if !strings.HasPrefix(rep.Observed, want) || got["DescribeNetworkInterfaces"] != describes {
		n.t.Fatalf("pass observed %q with EC2 calls %v; want %q and %d DescribeNetworkInterfaces",
			rep.Observed, ec2Only(got), want, describes)
	}
	return rep
}

// A mutation EC2 answered in full needs no confirming Describe: the store
// holds what the answer said. While IMDS lags behind it (the new address not
// shown yet) IMDS disagrees with the store, so the passes ask EC2 and the
// store keeps the address; once IMDS shows it, no EC2 call.
func TestLaggingIMDSSendsThePassToEC2AfterAMutation(t *testing.T) {
	const lag = 10 * time.Second
	n := lagNode(t, lag, env{"WARM_IP_TARGET": "2"})
	n.settle(lag)
	n.passObserving(FromIMDS, 0)
	if ec2Calls(n.sim.Counters()) != 0 {
		t.Fatalf("a pass at rest made EC2 calls %v", ec2Only(n.sim.Counters()))
	}
	before := n.snapshot()
	if _, err := n.addPod(); err != nil { // one free left: the pass assigns one more
		t.Fatal(err)
	}
	if rep := n.passObserving(FromIMDS, 0); len(rep.Plan.Actions) != 1 || mutating(n.sim.Counters()) != 1 {
		t.Fatalf("plan %+v, calls %v; want one assign", rep.Plan.Actions, n.sim.Counters())
	}
	added := newAddrs(before, n.snapshot())
	if len(added) != 1 {
		t.Fatalf("the assign's answer added %v to the store; want one address", added)
	}
	for i := 0; i < 2; i++ { // IMDS does not show the new address yet
		n.passObserving(FromEC2+": IMDS disagrees", 1)
		if !n.holds(added[0]) {
			t.Fatalf("pass %d while IMDS lags dropped %s, which EC2 assigned", i, added[0])
		}
	}
	n.clock.Advance(lag)
	n.passObserving(FromIMDS, 0)
	checkAgrees(t, n.sim, n.st)
}

// With an IMDS that keeps up, a node growing from nothing to its pods and
// giving the excess back makes no Describe to confirm its own calls: every
// pass after one whose calls EC2 answered in full reads IMDS. (Deleting an
// ENI needs its attachment, which IMDS does not show: that pass describes.)
func TestAnsweredMutationsNeedNoConfirmingDescribe(t *testing.T) {
	n := lagNode(t, 0, env{"WARM_IP_TARGET": "1", "RELEASE_DELAY": "60"})
	n.settle(0)
	var keys []string
	step := func(what string) {
		t.Helper()
		n.sim.ResetCounters()
		rep := n.pass()
		if rep.Observed != FromIMDS {
			t.Fatalf("%s: pass observed %q; want %q after calls EC2 answered in full", what, rep.Observed, FromIMDS)
		}
		deletes := strings.Count(strings.Join(rep.Calls, " "), "DeleteNetworkInterface")
		if got := n.sim.Counters()["DescribeNetworkInterfaces"]; (deletes == 0) != (got == 0) {
			t.Fatalf("%s: %d Describes with calls %v; want one only before a delete", what, got, rep.Calls)
		}
	}
	for i := 0; i < 9; i++ { // t3.small: 3 ENIs of 3 pod addresses, so this creates two ENIs
		a, err := n.addPod()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, a.Key)
		step("growing")
		n.clock.Advance(time.Second)
	}
	for _, k := range keys {
		n.delPod(k)
	}
	for i := 0; i < 8; i++ { // past the cooldown and the release delay
		n.clock.Advance(45 * time.Second)
		step("shrinking")
	}
	if enis, _ := simHeld(n.sim); enis != 1 {
		t.Fatalf("%d ENIs in EC2 after the pods left; want the primary alone", enis)
	}
	checkAgrees(t, n.sim, n.st)
}

// A call whose outcome the node cannot know (EC2 answered 5xx, after the
// SDK's retries) is confirmed by a Describe on the next pass; a call EC2
// refused outright changed nothing and needs none.
func TestUnknownOutcomeIsConfirmedByEC2(t *testing.T) {
	for _, c := range []struct {
		code, want string
	}{
		{"InternalError", FromEC2 + ": confirming"},
		{"InsufficientFreeAddressesInSubnet", FromIMDS},
		{"RequestLimitExceeded", FromIMDS},
	} {
		t.Run(c.code, func(t *testing.T) {
			n := lagNode(t, 0, env{"WARM_IP_TARGET": "2"})
			n.settle(0)
			if _, err := n.addPod(); err != nil {
				t.Fatal(err)
			}
			n.sim.FailNext("AssignPrivateIpAddresses", c.code, 10)
			if rep, err := n.r.Run(ctxFor(t), Options{}); err == nil || len(rep.Failed) != 1 {
				t.Fatalf("the assign was to fail with %s: err %v, failed %v", c.code, err, rep.Failed)
			}
			n.sim.FailNext("AssignPrivateIpAddresses", "", 0)
			n.clock.Advance(3 * time.Minute) // past a subnet back-off
			n.passObserving(c.want, map[bool]int{true: 1}[strings.HasPrefix(c.want, FromEC2)])
			checkAgrees(t, n.sim, n.st)
		})
	}
}

// answered: which outcomes are EC2's word, and which need a Describe.
func TestAnsweredTellsAnswersFromUnknownOutcomes(t *testing.T) {
	ip := netip.MustParseAddr
	full := &cloud.ENIInfo{ID: "eni-1", MAC: "02:00:00:00:00:01", PrimaryIP: ip("100.64.0.10"),
		Secondary: []netip.Addr{ip("100.64.0.11"), ip("100.64.0.12")}}
	blocks := []netip.Prefix{netip.MustParsePrefix("100.64.0.20/32"), netip.MustParsePrefix("100.64.0.21/32")}
	for _, c := range []struct {
		name string
		res  result
		want bool
	}{
		{"create answered with its addresses", result{step: stepOf(pool.CreateENI, 2), Created: full, Done: true}, true},
		{"create answered with fewer addresses", result{step: stepOf(pool.CreateENI, 3), Created: full, Done: true}, false},
		{"create answered without a MAC", result{step: stepOf(pool.CreateENI, 2), Created: &cloud.ENIInfo{ID: "eni-1",
			PrimaryIP: ip("100.64.0.10"), Secondary: full.Secondary}, Done: true}, false},
		{"assign answered in full", result{step: stepOf(pool.Assign, 2), Blocks: blocks, Done: true}, true},
		{"assign answered partly", result{step: stepOf(pool.Assign, 3), Blocks: blocks, Done: true}, false},
		{"unassign succeeded", result{step: stepOf(pool.Unassign, 0), Done: true}, true},
		{"delete succeeded", result{step: stepOf(pool.DeleteENI, 0), Done: true}, true},
		{"never sent", result{step: stepOf(pool.Assign, 2), Err: errSkipped}, true},
		{"refused: subnet full", result{step: stepOf(pool.Assign, 2), Err: &cloud.Error{Kind: cloud.KindSubnetFull}}, true},
		{"refused: instance limit (the store is off)", result{step: stepOf(pool.Assign, 2), Err: &cloud.Error{Kind: cloud.KindLimit}}, false},
		{"timed out", result{step: stepOf(pool.Unassign, 0), Err: &cloud.Error{Kind: cloud.KindTimeout}}, false},
		{"throttled: EC2 did nothing", result{step: stepOf(pool.Assign, 2), Err: &cloud.Error{Kind: cloud.KindThrottled}}, true},
		{"a plain error", result{step: stepOf(pool.DeleteENI, 0), Err: errors.New("boom")}, false},
	} {
		if got := answered(c.res); got != c.want {
			t.Errorf("%s: answered %v, want %v", c.name, got, c.want)
		}
	}
}

func stepOf(k pool.ActionKind, count int) step {
	return step{Action: pool.Action{Kind: k, ENIID: "eni-1", Count: count}}
}

// newAddrs lists the addresses after holds and before does not.
func newAddrs(before, after pool.Snapshot) []netip.Addr {
	had := map[netip.Prefix]bool{}
	for _, e := range before.ENIs {
		for _, b := range e.Blocks {
			had[b.CIDR] = true
		}
	}
	var out []netip.Addr
	for _, e := range after.ENIs {
		for _, b := range e.Blocks {
			if !had[b.CIDR] {
				out = append(out, b.CIDR.Addr())
			}
		}
	}
	return out
}

// The safety net: a pass at rest reads EC2 once the jittered resync
// interval has passed, and then not again until the next one.
func TestSafetyNetReadsEC2AtTheResyncInterval(t *testing.T) {
	n := lagNode(t, 0, env{"WARM_IP_TARGET": "2", "VPC_CNI_EC2_RESYNC_INTERVAL": "10m"})
	n.settle(0)
	n.clock.Advance(8*time.Minute + 59*time.Second) // before the earliest due time (-10 %)
	n.passObserving(FromIMDS, 0)
	n.clock.Advance(2*time.Minute + 2*time.Second) // after the latest (+10 %)
	n.passObserving(FromEC2+": safety-net", 1)
	n.clock.Advance(time.Minute)
	n.passObserving(FromIMDS, 0)
}

// An address EC2 took away (out of band) while IMDS lags: passes trust IMDS
// until a source shows it gone; from then on the store never hands it out,
// although the lagging IMDS still lists it.
func TestAddressGoneFromEC2IsNeverHandedOut(t *testing.T) {
	for _, c := range []struct {
		name    string
		lag     time.Duration
		advance time.Duration // until a pass sees it gone
		why     string
	}{
		{"IMDS catches up", time.Minute, time.Minute, "IMDS disagrees"},
		{"the safety net finds it", time.Hour, 17 * time.Minute, "safety-net"},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := lagNode(t, c.lag, env{"WARM_IP_TARGET": "3"})
			n.settle(c.lag)
			gone := n.takeOutOfBand()
			n.clock.Advance(10 * time.Second)
			n.passObserving(FromIMDS, 0) // nobody has shown the node it is gone
			n.clock.Advance(c.advance)
			n.passObserving(FromEC2+": "+c.why, 1)
			// IMDS (still lagging, or not) never brings it back: the store
			// holds only what EC2 has (which may assign it to us anew).
			for i := 0; i < 3; i++ {
				n.clock.Advance(20 * time.Second)
				n.pass()
				if n.holds(gone) != n.ec2Holds(gone) {
					t.Fatalf("pass %d after EC2 showed %s gone: store holds it %v, EC2 %v", i, gone, n.holds(gone), n.ec2Holds(gone))
				}
			}
			for {
				a, err := n.addPod()
				if errors.Is(err, store.ErrNoFreeAddress) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if !n.ec2Holds(a.IP) {
					t.Fatalf("handed out %s, which EC2 took away", a.IP)
				}
			}
		})
	}
}

// takeOutOfBand unassigns the node's highest free secondary address in EC2
// behind the store's back, and returns it.
func (n *node) takeOutOfBand() netip.Addr {
	n.t.Helper()
	snap := n.snapshot()
	for i := len(snap.ENIs) - 1; i >= 0; i-- {
		e := snap.ENIs[i]
		if len(e.Blocks) == 0 {
			continue
		}
		b := e.Blocks[len(e.Blocks)-1]
		if err := n.r.Cloud.UnassignAddresses(ctxFor(n.t), e.ID, []netip.Prefix{b.CIDR}); err != nil {
			n.t.Fatal(err)
		}
		return b.CIDR.Addr()
	}
	n.t.Fatal("no secondary address to take")
	return netip.Addr{}
}

func (n *node) holds(ip netip.Addr) bool {
	for _, e := range n.snapshot().ENIs {
		for _, b := range e.Blocks {
			if b.CIDR.Contains(ip) {
				return true
			}
		}
	}
	return false
}

// ec2Holds reports whether EC2 has ip on one of the node's ENIs.
func (n *node) ec2Holds(ip netip.Addr) bool {
	for _, e := range n.sim.State().ENIs {
		for _, b := range simBlocks(e) {
			if b.Contains(ip) && e.DeviceIndex >= 0 {
				return true
			}
		}
	}
	return false
}

// A throttled create made no ENI: its intent goes, and the next pass plans
// the create again instead of replaying it (which would make an ENI only to
// delete it, in the very bucket that throttled).
func TestThrottledCreateIsNotRepaired(t *testing.T) {
	n := lagNode(t, 0, env{"WARM_IP_TARGET": "5"}) // t3.small: 3 on the primary ENI, so a second one
	n.sim.FailNext("CreateNetworkInterface", "RequestLimitExceeded", 10)
	if rep, err := n.r.Run(ctxFor(t), Options{}); err == nil || !strings.Contains(strings.Join(rep.Failed, " "), "create") {
		t.Fatalf("the create was to be throttled: err %v, failed %v", err, rep.Failed)
	}
	n.sim.FailNext("CreateNetworkInterface", "", 0)
	n.sim.ResetCounters()
	n.clock.Advance(time.Minute)
	n.pass()
	if got := n.sim.Counters(); got["CreateNetworkInterface"] != 1 || got["DeleteNetworkInterface"] != 0 {
		t.Fatalf("the pass after a throttled create made %v; want one create and no delete", ec2Only(got))
	}
	n.converge(3)
	checkAgrees(t, n.sim, n.st)
}
