package pool

import (
	"fmt"
	"net/netip"
	"testing"
	"time"
)

func TestClassifyFollowsTheReferenceAndNeverDeletesWhatItDidNotCreate(t *testing.T) {
	ours := ENIFacts{Known: true, NodeTagged: true, Created: true}
	cases := []struct {
		name         string
		f            ENIFacts
		card, device int
		manage       bool
		want         Class
		why          string
	}{
		{"created by vpc-cni", ours, 0, 1, true, Ours, "created by vpc-cni"},
		{"the primary is the node's", ENIFacts{Known: true}, 0, 0, false, Adopted, "primary"},
		{"an efa primary is still the node's", ENIFacts{Known: true, InterfaceType: "efa"}, 0, 0, true, Adopted, "primary"},
		{"no_manage=true", ENIFacts{Known: true, HasNoManage: true, NoManage: "true"}, 0, 1, true, NotOurs, "no_manage"},
		{"no_manage=true beats our tags", ENIFacts{Known: true, HasNoManage: true, NoManage: "true", Created: true, NodeTagged: true}, 0, 1, true, NotOurs, "no_manage"},
		{"no_manage=false is an explicit allow", ENIFacts{Known: true, HasNoManage: true, NoManage: "false"}, 0, 1, false, Adopted, "no_manage=false"},
		{"no_manage=yes is an allow too", ENIFacts{Known: true, HasNoManage: true, NoManage: "yes"}, 0, 1, false, Adopted, "no_manage=yes"},
		{"trunk", ENIFacts{Known: true, InterfaceType: "trunk"}, 0, 2, true, NotOurs, "trunk"},
		{"efa", ENIFacts{Known: true, InterfaceType: "efa"}, 0, 2, true, NotOurs, "efa"},
		{"efa-only", ENIFacts{Known: true, InterfaceType: "efa-only"}, 0, 2, true, NotOurs, "efa-only"},
		{"branch", ENIFacts{Known: true, InterfaceType: "branch"}, 0, 2, true, NotOurs, "branch"},
		{"a type EC2 adds later", ENIFacts{Known: true, InterfaceType: "new-kind"}, 0, 2, true, NotOurs, "new-kind"},
		{"card 1, even ours", ours, 1, 1, true, NotOurs, "card 1"},
		{"card 2 device 0", ENIFacts{Known: true}, 2, 0, true, NotOurs, "card 2"},
		{"tagged for this node, another description", ENIFacts{Known: true, NodeTagged: true}, 0, 1, false, Adopted, "tagged for this node"},
		{"untagged, MANAGE_UNTAGGED_ENI=true", ENIFacts{Known: true}, 0, 1, true, Adopted, "untagged, MANAGE_UNTAGGED_ENI=true"},
		{"untagged, MANAGE_UNTAGGED_ENI=false", ENIFacts{Known: true}, 0, 1, false, NotOurs, "untagged, MANAGE_UNTAGGED_ENI=false"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, why := Classify(c.f, c.card, c.device, c.manage)
			if got != c.want || why != c.why {
				t.Fatalf("Classify = %s (%s), want %s (%s)", got, why, c.want, c.why)
			}
			e := ENI{DeviceIndex: c.device, Card: c.card, Class: got}
			if e.Deletable() && got != Ours {
				t.Fatalf("a %s ENI is deletable", got)
			}
		})
	}
}

// classNode is a node with the primary (full: 4 free), an ENI of the given class
// at device 1 (all free) and room for 4 ENIs of 4 slots.
func classNode(class Class, card int, blocks ...Block) Input {
	lim := Limits{MaxENIs: 4, IPv4PerENI: 5}
	prim := ENI{ID: "eni-p", DeviceIndex: 0, Ready: true, Class: Adopted, Blocks: []Block{
		block("100.64.0.10/32", false, addr("100.64.0.10", Free, startTime.Add(-time.Hour))),
		block("100.64.0.11/32", false, addr("100.64.0.11", Free, startTime.Add(-time.Hour))),
		block("100.64.0.12/32", false, addr("100.64.0.12", Free, startTime.Add(-time.Hour))),
		block("100.64.0.13/32", false, addr("100.64.0.13", Free, startTime.Add(-time.Hour))),
	}}
	other := ENI{ID: "eni-x", DeviceIndex: 1, Card: card, Ready: class != NotOurs, Class: class, Blocks: blocks}
	return Input{Limits: lim, Config: Config{WarmENITarget: 1, Cooldown: 30 * time.Second, ReleaseDelay: time.Minute},
		Snapshot: Snapshot{ENIs: []ENI{prim, other}}, Now: startTime}
}

func freeBlocks(n int, since time.Time) []Block {
	var out []Block
	for i := range n {
		ip := fmt.Sprintf("100.64.1.%d", i+1)
		out = append(out, block(ip+"/32", false, addr(ip, Free, since)))
	}
	return out
}

func TestNotOursENIIsNeverGrownReleasedDeletedOrPicked(t *testing.T) {
	old := startTime.Add(-time.Hour)
	for _, card := range []int{0, 1} {
		for _, c := range []Config{
			{WarmENITarget: 1}, {WarmENITarget: 0}, {WarmIPTarget: 1}, {WarmIPTarget: 20, MinIPTarget: 30},
			{MinIPTarget: 1}, {PrefixDelegation: true, WarmPrefixTarget: 1},
		} {
			in := classNode(NotOurs, card, freeBlocks(3, old)...)
			c.Cooldown, c.ReleaseDelay = 30*time.Second, time.Minute
			in.Config = c
			in.Snapshot.ExcessSince = old // any excess is due
			plan := Compute(in)
			for _, a := range plan.Actions {
				if a.ENIID == "eni-x" {
					t.Fatalf("card %d, %+v: plan touches the not-ours ENI: %+v", card, c, a)
				}
				if a.Kind == CreateENI && card == 0 && a.DeviceIndex == 1 {
					t.Fatalf("card 0: a new ENI at the not-ours ENI's device: %+v", a)
				}
			}
			if plan.Figures.Free != 4 {
				t.Fatalf("card %d, %+v: free %d, want only the primary's 4", card, c, plan.Figures.Free)
			}
			snap := in.Snapshot
			snap.ENIs[1].Ready = true // even if something marked it ready
			if e, _, _, ok := PickAddress(snap, in.Now, c.Cooldown); ok && snap.ENIs[e].ID == "eni-x" {
				t.Fatalf("PickAddress chose the not-ours ENI")
			}
		}
	}
}

func TestNotOursENITakesASlotAndMaxPods(t *testing.T) {
	// WARM_IP_TARGET=20 asks for far more than 4 ENIs of 4 slots hold.
	cfg := Config{WarmIPTarget: 20, Cooldown: 30 * time.Second, ReleaseDelay: time.Minute}
	figures := func(class Class, card int) (Figures, int) {
		in := classNode(class, card, freeBlocks(1, startTime.Add(-time.Hour))...)
		in.Config = cfg
		plan := Compute(in)
		grown := 0
		for _, a := range plan.Actions {
			grown += a.Count
		}
		return plan.Figures, grown
	}
	fo, grownOurs := figures(Ours, 0)
	fn, grownNot := figures(NotOurs, 0)
	f1, grownCard1 := figures(NotOurs, 1)
	// Ours: 3 free slots on eni-x + 2 new ENIs of 4 = 11. Not ours at
	// card 0: 2 new ENIs of 4 = 8; at card 1 (its own card's slot): 3 new = 12.
	if grownOurs != 11 || grownNot != 8 || grownCard1 != 12 {
		t.Fatalf("grown: ours %d, not ours %d, card 1 %d; want 11, 8, 12", grownOurs, grownNot, grownCard1)
	}
	if fo.MaxPods != 4*4+2 || fn.MaxPods != 3*4+2 || f1.MaxPods != 4*4+2 {
		t.Fatalf("max pods: ours %d, not ours %d, card 1 %d; want 18, 14, 18", fo.MaxPods, fn.MaxPods, f1.MaxPods)
	}
	if fn.NotOurs != 1 || f1.NotOurs != 0 {
		t.Fatalf("Figures.NotOurs: %d at card 0, %d at card 1; want 1, 0", fn.NotOurs, f1.NotOurs)
	}
}

func TestAdoptedENIGivesBackAddressesNeverItself(t *testing.T) {
	old := startTime.Add(-time.Hour)
	for _, c := range []Config{{WarmENITarget: 0}, {WarmIPTarget: 1}, {MinIPTarget: 1}} {
		for _, class := range []Class{Adopted, Ours} {
			in := classNode(class, 0, freeBlocks(3, old)...)
			c.Cooldown, c.ReleaseDelay = 30*time.Second, time.Minute
			in.Config = c
			in.Snapshot.ExcessSince = old
			plan := Compute(in)
			var kinds []ActionKind
			for _, a := range plan.Actions {
				if a.ENIID == "eni-x" {
					kinds = append(kinds, a.Kind)
				}
			}
			want := DeleteENI
			if class == Adopted {
				want = Unassign
			}
			if len(kinds) != 1 || kinds[0] != want {
				t.Fatalf("%s ENI, %+v: actions on it %v, want [%s]", class, c, kinds, want)
			}
		}
	}
}

func TestClassChangeKeepsPodsAddressesAndGivesNoNewOnes(t *testing.T) {
	old := startTime.Add(-time.Hour)
	held := block("100.64.1.1/32", false, Addr{IP: netip.MustParseAddr("100.64.1.1"), State: Assigned, Since: old, Owner: "c/eth0"})
	in := classNode(NotOurs, 0, append([]Block{held}, freeBlocks(2, old)[1:]...)...)
	in.Config.WarmIPTarget = 1
	in.Snapshot.ExcessSince = old
	plan := Compute(in)
	for _, a := range plan.Actions {
		if a.ENIID == "eni-x" {
			t.Fatalf("plan touches the ENI that became not ours: %+v", a)
		}
	}
	if plan.Figures.Assigned != 1 {
		t.Fatalf("assigned %d, want the pod's 1 counted", plan.Figures.Assigned)
	}
}
