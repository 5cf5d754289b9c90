package reconcile

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"vpc-cni/sim/ec2sim"
	"vpc-cni/store"
)

// ec2CallCount counts the emulator's EC2 calls (IMDS requests are not EC2's),
// mutating ones apart.
func ec2CallCount(sim *ec2sim.Sim) (all, mutating int, names []string) {
	for action, n := range sim.Counters() {
		if strings.HasPrefix(action, "IMDS") {
			continue
		}
		all += n
		names = append(names, fmt.Sprintf("%s=%d", action, n))
		if !strings.HasPrefix(action, "Describe") {
			mutating += n
		}
	}
	slices.Sort(names)
	return all, mutating, names
}

// provisioned is a node whose pool another pass (aws-node, or vpc-cni before
// the knob) filled: 2 ENIs and their addresses attached.
func provisioned(t *testing.T) *ec2sim.Sim {
	n := newNode(t, "m5.large", env{"WARM_IP_TARGET": "12"})
	n.converge(5)
	if enis, _ := simHeld(n.sim); enis < 2 {
		t.Fatalf("%d ENIs attached, want 2", enis)
	}
	return n.sim
}

// churnDay runs a pass every 5 minutes for 24 simulated hours, with pods
// started and deleted between passes, and returns how many ADDs got an
// address.
func churnDay(t *testing.T, n *node) (served int) {
	var live []string
	for tick := range 24 * 12 {
		n.clock.Advance(5 * time.Minute)
		for range tick % 4 { // 0..3 new pods a tick
			if a, err := n.addPod(); err == nil {
				live, served = append(live, a.Key), served+1
			}
		}
		for len(live) > 0 && (tick%3 == 0 || len(live) > 8) {
			n.delPod(live[0])
			live = live[1:]
		}
		n.pass()
	}
	return served
}

// ENABLE_IMDS_ONLY_MODE: a fresh state on a provisioned node learns the node
// and its ENIs from IMDS, serves a day of pod churn from what is attached,
// and makes no EC2 call at all, counted by the emulator.
func TestIMDSOnlyModeMakesNoEC2CallInADay(t *testing.T) {
	sim := provisioned(t)
	n := attachNode(t, sim, t.TempDir(), env{"ENABLE_IMDS_ONLY_MODE": "true", "WARM_IP_TARGET": "12"})
	sim.ResetCounters()
	served := churnDay(t, n)
	if all, _, names := ec2CallCount(sim); all != 0 {
		t.Errorf("IMDS-only mode made %d EC2 calls in a simulated day: %v", all, names)
	}
	if served < 200 {
		t.Errorf("%d ADDs served in a day, want the churn's (the attached addresses should serve them)", served)
	}
	if sim.Counters()["IMDS"] == 0 {
		t.Error("no IMDS read: the passes did not look at the node")
	}
	var node store.Node
	_ = n.st.View(func(tx *store.Tx) (err error) { node, _, err = tx.Node(); return err })
	if node.Limits.MaxENIs != 3 || node.Limits.IPv4PerENI != 10 {
		t.Errorf("limits learnt %+v, want m5.large's 3 ENIs of 10 from the built-in table", node.Limits)
	}
}

// DISABLE_NETWORK_RESOURCE_PROVISIONING: pods use what is attached; a pass
// that would grow reads EC2 but changes nothing, and says why.
func TestDisabledProvisioningMakesNoMutatingCall(t *testing.T) {
	sim := provisioned(t)
	n := attachNode(t, sim, t.TempDir(), env{"DISABLE_NETWORK_RESOURCE_PROVISIONING": "true", "WARM_IP_TARGET": "30"})
	sim.ResetCounters()
	rep := n.pass()
	if !slices.ContainsFunc(rep.Findings, func(f Finding) bool { return f.Kind == "provisioning-off" }) {
		t.Errorf("findings %+v; want one saying the pool does not grow", rep.Findings)
	}
	if len(rep.Plan.Actions) != 0 || len(rep.Failed) != 0 {
		t.Errorf("plan %+v failed %v; want no action and no failure", rep.Plan.Actions, rep.Failed)
	}
	served := churnDay(t, n)
	if _, mutating, names := ec2CallCount(sim); mutating != 0 {
		t.Errorf("%d mutating EC2 calls with provisioning disabled: %v", mutating, names)
	}
	if served < 200 {
		t.Errorf("%d ADDs served in a day from the attached addresses", served)
	}
}
