package reconcile

import (
	"strings"
	"testing"
	"time"

	"vpc-cni/cloud"
)

// A subnet with no free address fails growth, persists a back-off that the
// next pass honours without calling EC2 to grow, and growth resumes after it.
func TestSubnetExhaustionBacksOff(t *testing.T) {
	n := newNode(t, "t3.small", env{"WARM_ENI_TARGET": "1"})
	n.sim.SetSubnetFree(0)
	_, err := n.r.Run(ctxFor(t), Options{})
	if !cloud.IsKind(err, cloud.KindSubnetFull) {
		t.Fatalf("want a subnet-full error, got %v", err)
	}
	snap := n.snapshot()
	if !snap.GrowBlockedUntil.After(n.clock.Now()) || !strings.Contains(snap.GrowBlockedWhy, "subnet") {
		t.Fatalf("no back-off persisted: until %v why %q", snap.GrowBlockedUntil, snap.GrowBlockedWhy)
	}
	n.clock.Advance(time.Minute) // within the back-off
	n.sim.ResetCounters()
	rep := n.pass()
	if m := mutating(n.sim.Counters()); m != 0 || !rep.Plan.Empty() {
		t.Errorf("a pass within the back-off made %d mutating calls (%v), plan %+v", m, n.sim.Counters(), rep.Plan.Actions)
	}
	if rep.Plan.Figures.Shortfall == 0 {
		t.Errorf("the figures hide the shortfall during the back-off: %+v", rep.Plan.Figures)
	}
	n.sim.SetSubnetFree(1000)
	n.clock.Advance(2 * time.Minute)
	n.converge(5)
	if enis, addrs := simHeld(n.sim); enis != 1 || addrs != 3 {
		t.Errorf("after the back-off EC2 holds %d ENIs, %d addresses; want 1, 3", enis, addrs)
	}
	checkAgrees(t, n.sim, n.st)
}

// An IAM policy without a mutating action fails the pass with a message
// naming the action; the intent is dropped and nothing leaks.
func TestDeniedMutationNamesTheAction(t *testing.T) {
	n := newNode(t, "t3.small", env{"WARM_ENI_TARGET": "1"})
	n.converge(5)
	if _, err := n.addPod(); err != nil {
		t.Fatal(err)
	}
	n.sim.DenyAction("CreateNetworkInterface")
	_, err := n.r.Run(ctxFor(t), Options{})
	if !cloud.IsKind(err, cloud.KindUnauthorized) || !strings.Contains(err.Error(), "ec2:CreateNetworkInterface") {
		t.Fatalf("want an unauthorized error naming ec2:CreateNetworkInterface, got %v", err)
	}
	checkAgrees(t, n.sim, n.st)
	n.sim.AllowAction("CreateNetworkInterface")
	n.converge(5)
	if enis, _ := simHeld(n.sim); enis != 2 {
		t.Errorf("EC2 holds %d ENIs once allowed, want 2", enis)
	}
	checkAgrees(t, n.sim, n.st)
}
