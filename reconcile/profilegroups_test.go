package reconcile

import (
	"slices"
	"strings"
	"testing"
	"time"

	"vpc-cni/store"
)

// payNode is a t3.medium with profile pay: sg-00000901 and every group of
// the VPC tagged team=payments (two), a web group tagged otherwise.
func payNode(t *testing.T, groups string) (n *node, tagged []string) {
	n = newNode(t, "t3.medium", env{})
	for _, name := range []string{"pay-a", "pay-b"} {
		id, err := n.sim.AddSecurityGroup(name, map[string]string{"team": "payments"})
		if err != nil {
			t.Fatal(err)
		}
		tagged = append(tagged, id)
	}
	if _, err := n.sim.AddSecurityGroup("web", map[string]string{"team": "web"}); err != nil {
		t.Fatal(err)
	}
	n.env["PROFILE_PAY_SECURITY_GROUPS"] = groups
	n.env["PROFILE_PAY_WARM_IP_TARGET"] = "2"
	n.r.Names = n.env.names
	return n, tagged
}

func sorted(s ...string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

func calls(rep *Report, call string) int {
	n := 0
	for _, c := range rep.Calls {
		if c == call {
			n++
		}
	}
	return n
}

// A profile's groups by tag: its ENI gets its IDs and exactly the groups
// tagged so, resolved with one DescribeSecurityGroups by the pass that
// creates it; passes at rest ask nothing more.
func TestAProfileByTagGetsExactlyTheTaggedGroups(t *testing.T) {
	n, tagged := payNode(t, "sg-00000901,tag:team=payments")
	rep := n.pass()
	if got := calls(rep, "DescribeSecurityGroups"); got != 1 {
		t.Fatalf("the creating pass made %d DescribeSecurityGroups (calls %v), want 1", got, rep.Calls)
	}
	n.converge(5)
	enis := profileENIs(n, "pay")
	want := sorted(append([]string{"sg-00000901"}, tagged...)...)
	if len(enis) != 1 || !slices.Equal(sorted(enis[0].Groups...), want) {
		t.Fatalf("pay's ENIs %+v, want one with groups %v", enis, want)
	}
	for _, e := range n.snapshot().ENIs {
		if e.Profile == "pay" && (e.GroupsDrift != "" || !slices.Equal(e.Groups, want)) {
			t.Fatalf("stored: %+v", e)
		}
	}
	n.sim.ResetCounters()
	for range 3 {
		n.clock.Advance(time.Minute)
		n.pass()
	}
	if got := n.sim.Counters(); got["DescribeSecurityGroups"] != 0 || got["DescribeNetworkInterfaces"] != 0 {
		t.Fatalf("passes at rest called EC2: %v", got)
	}
}

// The drift check compares an ENI with the resolved set: groups changed
// behind vpc-cni's back are found (IMDS, then EC2 and the set), and a group
// tagged since makes the ENI drift at the next safety-net read.
func TestAProfileByTagsDriftIsJudgedAgainstTheResolvedSet(t *testing.T) {
	n, tagged := payNode(t, "tag:team=payments")
	n.converge(5)
	pay := profileENIs(n, "pay")[0]
	if err := n.r.Cloud.SetENIGroups(ctxFor(t), pay.ID, tagged[:1]); err != nil {
		t.Fatal(err)
	}
	rep := n.pass()
	if !strings.Contains(rep.Observed, "other security groups") || calls(rep, "DescribeSecurityGroups") != 1 ||
		!hasFinding(rep.Findings, "profile-groups-drift", pay.ID) {
		t.Fatalf("observed %q, calls %v, findings %+v; want the drift of %s", rep.Observed, rep.Calls, rep.Findings, pay.ID)
	}
	if err := n.r.Cloud.SetENIGroups(ctxFor(t), pay.ID, tagged); err != nil {
		t.Fatal(err)
	}
	if rep := n.pass(); !hasFinding(rep.Findings, "profile-groups-restored", pay.ID) {
		t.Fatalf("restored groups: findings %+v", rep.Findings)
	}

	late, err := n.sim.AddSecurityGroup("pay-late", map[string]string{"team": "payments"})
	if err != nil {
		t.Fatal(err)
	}
	n.clock.Advance(time.Minute)
	if rep := n.pass(); calls(rep, "DescribeSecurityGroups") != 0 {
		t.Fatalf("a pass at rest resolved the groups: %v", rep.Calls)
	}
	n.clock.Advance(20 * time.Minute) // past VPC_CNI_EC2_RESYNC_INTERVAL
	rep = n.pass()
	if !strings.Contains(rep.Observed, "safety-net") || !hasFinding(rep.Findings, "profile-groups-drift", late) {
		t.Fatalf("observed %q, findings %+v; want drift naming %s", rep.Observed, rep.Findings, late)
	}
}

// A selector no group matches: no ENI is created (EC2 would give it the
// VPC's default group), the pass says which profile and selector, the
// profile's growth pauses, and once a group carries the tag the ENI comes.
func TestAProfileSelectorMatchingNothingCreatesNoENI(t *testing.T) {
	n, _ := payNode(t, "sg-00000901,tag:team=nobody")
	rep, err := n.r.Run(ctxFor(t), Options{})
	if err == nil || !strings.Contains(err.Error(), "tag:team=nobody") {
		t.Fatalf("pass error %v, want the selector named", err)
	}
	if !hasFinding(rep.Findings, "profile-groups-unresolved", "PROFILE_PAY_SECURITY_GROUPS") ||
		!hasFinding(rep.Findings, "profile-groups-unresolved", "tag:team=nobody") {
		t.Fatalf("findings %+v", rep.Findings)
	}
	if got := profileENIs(n, "pay"); len(got) != 0 || n.sim.Counters()["CreateNetworkInterface"] != 0 {
		t.Fatalf("pay got ENIs %+v (creates %d)", got, n.sim.Counters()["CreateNetworkInterface"])
	}
	snap := n.snapshot()
	if why := snap.Profiles["pay"].GrowBlockedWhy; !strings.Contains(why, "tag:team=nobody") {
		t.Fatalf("pay's pool is not paused with the cause: %q", why)
	}
	err = n.st.View(func(tx *store.Tx) error {
		in, err := tx.Intents()
		if len(in) != 0 {
			t.Fatalf("intents left: %+v", in)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	n.sim.ResetCounters()
	n.clock.Advance(time.Minute)
	n.r.Run(ctxFor(t), Options{})
	if got := n.sim.Counters()["DescribeSecurityGroups"]; got != 0 {
		t.Fatalf("a paused profile asked EC2 again: %d", got)
	}

	late, err := n.sim.AddSecurityGroup("late", map[string]string{"team": "nobody"})
	if err != nil {
		t.Fatal(err)
	}
	n.clock.Advance(5 * time.Minute)
	n.converge(5)
	if got := profileENIs(n, "pay"); len(got) != 1 || !slices.Equal(sorted(got[0].Groups...), sorted("sg-00000901", late)) {
		t.Fatalf("pay's ENIs once a group carries the tag: %+v", got)
	}
}
