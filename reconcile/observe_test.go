package reconcile

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"vpc-cni/internal/ec2sim"
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

// After the node's own mutation the next pass confirms it in EC2, and while
// IMDS lags behind it the passes keep asking EC2; once IMDS shows it, none.
func TestMutationsAreConfirmedByEC2WhileIMDSLags(t *testing.T) {
	const lag = 10 * time.Second
	n := lagNode(t, lag, env{"WARM_IP_TARGET": "2"})
	n.settle(lag)
	n.passObserving(FromIMDS, 0)
	if ec2Calls(n.sim.Counters()) != 0 {
		t.Fatalf("a pass at rest made EC2 calls %v", ec2Only(n.sim.Counters()))
	}
	if _, err := n.addPod(); err != nil { // one free left: the pass assigns one more
		t.Fatal(err)
	}
	if rep := n.passObserving(FromIMDS, 0); len(rep.Plan.Actions) != 1 || mutating(n.sim.Counters()) != 1 {
		t.Fatalf("plan %+v, calls %v; want one assign", rep.Plan.Actions, n.sim.Counters())
	}
	n.passObserving(FromEC2+": confirming", 1)
	n.passObserving(FromEC2+": IMDS disagrees", 1) // IMDS does not show the new address yet
	n.clock.Advance(lag)
	n.passObserving(FromIMDS, 0)
	checkAgrees(t, n.sim, n.st)
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
