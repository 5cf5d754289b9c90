package pool

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

// excessNode builds a t2.medium with WARM_IP_TARGET=2 and 8 pods on two ENIs
// (5 + 3), then deletes the 6 lowest pods and lets their cooldown pass.
func excessNode(t *testing.T) *sim {
	c := Defaults()
	c.WarmIPTarget = 2
	s := newSim(t, t2medium, c)
	s.steady()
	s.addPods(8)
	for range 6 {
		s.delPod(0)
	}
	return s
}

func TestReleaseWaitsForTheReleaseDelay(t *testing.T) {
	s := excessNode(t)
	if p := s.plan(); !p.Empty() || p.Figures.Excess != 0 || p.Figures.Cooling != 6 || !p.ExcessSince.IsZero() {
		t.Fatalf("cooling addresses are not free, so not excess: %+v", p)
	}
	s.advance(s.in.Config.Cooldown)
	first := s.in.Now
	if p := s.plan(); !p.Empty() || p.Figures.Excess != 6 || !p.ExcessSince.Equal(first) {
		t.Fatalf("first sight of excess: %+v; want no action, ExcessSince now", p)
	}
	s.advance(s.in.Config.ReleaseDelay - time.Second)
	if p := s.plan(); !p.Empty() || !p.ExcessSince.Equal(first) {
		t.Fatalf("before the delay: %+v; want no action, ExcessSince kept", p)
	}
	s.advance(time.Second)
	p := s.plan()
	eni0, eni1 := s.eniAt(0), s.eniAt(1)
	want := []Action{
		{Kind: Unassign, ENIID: eni1.ID, DeviceIndex: 1, Count: 3, Release: cidrs(eni1, 0, 3, 4)},
		{Kind: Unassign, ENIID: eni0.ID, DeviceIndex: 0, Count: 3, Release: cidrs(eni0, 2, 3, 4)},
	}
	if !sameActions(p.Actions, want) || !p.ExcessSince.IsZero() {
		t.Fatalf("after the delay: %+v; want %+v and ExcessSince reset", p.Actions, want)
	}
	if !strings.Contains(p.Actions[0].Reason, "WARM_IP_TARGET=2: 8 free") {
		t.Errorf("reason %q lacks the figures", p.Actions[0].Reason)
	}
	s.apply(p)
	if got := s.count(); got.free != 2 || got.assigned != 2 {
		t.Fatalf("after release: %+v; want 2 free and the 2 pods", got)
	}
	if p := s.plan(); !p.Empty() {
		t.Fatalf("at target: %+v", p.Actions)
	}
}

func cidrs(e *ENI, idx ...int) []netip.Prefix {
	var out []netip.Prefix
	for _, i := range idx {
		out = append(out, e.Blocks[i].CIDR)
	}
	return out
}

func TestExcessThatGoesAwayResetsTheDelay(t *testing.T) {
	s := excessNode(t)
	s.advance(s.in.Config.Cooldown)
	s.plan()
	for range 6 {
		s.addPod()
	}
	if p := s.plan(); !p.ExcessSince.IsZero() || p.Figures.Excess != 0 {
		t.Fatalf("excess gone: %+v; want ExcessSince zero", p)
	}
}

func TestEmptiedENIIsDeletedNotUnassigned(t *testing.T) {
	c := Defaults()
	c.WarmIPTarget = 1
	s := newSim(t, t2medium, c)
	s.steady()
	s.addPods(6) // ENI 0: 5 pods; ENI 1: 1 pod + 1 free
	s.delPod(5)
	s.delPod(0) // 3 free: 2 excess, all of ENI 1
	s.advance(c.Cooldown)
	s.plan()
	s.advance(c.ReleaseDelay)
	p := s.plan()
	want := []Action{{Kind: DeleteENI, ENIID: s.eniAt(1).ID, DeviceIndex: 1}}
	if !sameActions(p.Actions, want) {
		t.Fatalf("plan %+v; want %+v", p.Actions, want)
	}
}

func TestWarmENITargetReturnsWholeENIsHighestFirst(t *testing.T) {
	c := Defaults()
	s := newSim(t, t3small, c)
	s.steady()
	s.addPods(5) // 3 ENIs
	for range 5 {
		s.delPod(0)
	}
	if p := s.plan(); !p.Empty() || p.Figures.Excess != 0 {
		t.Fatalf("cooling addresses keep their ENIs: %+v", p)
	}
	s.advance(c.Cooldown)
	s.plan()
	s.advance(c.ReleaseDelay)
	p := s.plan()
	want := []Action{
		{Kind: DeleteENI, ENIID: s.eniAt(2).ID, DeviceIndex: 2},
		{Kind: DeleteENI, ENIID: s.eniAt(1).ID, DeviceIndex: 1},
	}
	if !sameActions(p.Actions, want) || p.Figures.Excess != 6 {
		t.Fatalf("plan %+v (figures %+v); want %+v", p.Actions, p.Figures, want)
	}
	s.apply(p)
	if got := s.count(); got.held() != 3 || len(s.in.Snapshot.ENIs) != 1 {
		t.Fatalf("after release: %d held on %d ENIs; want 3 on 1", got.held(), len(s.in.Snapshot.ENIs))
	}
}

func TestWarmENITargetNeverReleasesSingleAddresses(t *testing.T) {
	s := newSim(t, t2medium, Defaults())
	s.steady()
	s.addPods(4)
	s.delPod(0) // ENI 0 has 1 pod left, ENI 1 is empty but needed
	s.advance(time.Hour)
	for range 3 {
		if p := s.plan(); !p.Empty() {
			t.Fatalf("plan %+v; want nothing", p.Actions)
		}
		s.advance(time.Hour)
	}
}

func TestReleasingBlocksAreNeitherHeldNorReleasedAgain(t *testing.T) {
	c := Defaults()
	c.WarmIPTarget = 1
	s := newSim(t, t3small, c)
	e0 := &s.in.Snapshot.ENIs[0]
	e0.Blocks = []Block{s.block(false), s.block(false), s.block(false)}
	e1 := s.newENI(1)
	e1.Blocks = []Block{s.block(false), s.block(false), s.block(false)}
	for i := range e1.Blocks {
		e1.Blocks[i].Releasing = true
	}
	s.in.Snapshot.ENIs = append(s.in.Snapshot.ENIs, e1)
	s.in.Snapshot.ExcessSince = s.in.Now.Add(-c.ReleaseDelay)
	p := s.plan()
	want := []Action{{Kind: Unassign, ENIID: e0.ID, Count: 2, Release: cidrs(e0, 1, 2)}}
	if !sameActions(p.Actions, want) || p.Figures.Releasing != 3 || p.Figures.Total != 3 {
		t.Fatalf("plan %+v figures %+v; want %+v, 3 releasing, 3 held", p.Actions, p.Figures, want)
	}
}

func TestReleasingBlocksTakeSlots(t *testing.T) {
	c := Defaults()
	c.WarmIPTarget = 3
	s := newSim(t, t3small, c)
	e0 := &s.in.Snapshot.ENIs[0]
	e0.Blocks = []Block{s.block(false), s.block(false), s.block(false)}
	e0.Blocks[2].Releasing = true
	p := s.plan()
	want := []Action{{Kind: CreateENI, DeviceIndex: 1, Count: 1}}
	if !sameActions(p.Actions, want) {
		t.Fatalf("plan %+v; want %+v", p.Actions, want)
	}
}

func TestGrowthWaitsOutTheSubnetBackOff(t *testing.T) {
	c := Defaults()
	c.WarmIPTarget = 4
	s := newSim(t, t3small, c)
	s.in.Snapshot.GrowBlockedUntil = s.in.Now.Add(time.Minute)
	if p := s.plan(); !p.Empty() || p.Figures.Shortfall != 4 {
		t.Fatalf("blocked: %+v; want no action and shortfall 4", p)
	}
	s.advance(time.Minute)
	if p := s.plan(); len(p.Actions) != 2 {
		t.Fatalf("unblocked: %+v; want an Assign and a CreateENI", p.Actions)
	}
}

func TestMinimumIPTargetAloneHoldsExactlyWhatIsNeeded(t *testing.T) {
	c := Defaults()
	c.MinIPTarget = 4
	s := newSim(t, t2medium, c)
	s.steady()
	s.addPods(4)
	if got := s.count(); got.held() != 4 || got.free != 0 {
		t.Fatalf("4 pods: %+v; want 4 held, none free (reference semantics)", got)
	}
	if _, ok := s.addPod(); ok {
		t.Fatalf("a fifth pod found a free address")
	}
}

func TestENIWithAnUnassignInFlightIsNotDeleted(t *testing.T) {
	s := newSim(t, t3small, Defaults()) // WARM_ENI_TARGET=1: one full ENI is enough
	s.steady()
	e1 := s.newENI(1)
	e1.Blocks = []Block{s.block(false), s.block(false)}
	e1.Blocks[1].Releasing = true
	s.in.Snapshot.ENIs = append(s.in.Snapshot.ENIs, e1)
	s.in.Snapshot.ExcessSince = s.in.Now.Add(-time.Hour)
	if p := s.plan(); !p.Empty() {
		t.Fatalf("plan %+v; want nothing until the unassign is done", p.Actions)
	}
	s.settle()
	s.plan()
	s.advance(s.in.Config.ReleaseDelay)
	p := s.plan()
	if want := []Action{{Kind: DeleteENI, ENIID: e1.ID, DeviceIndex: 1}}; !sameActions(p.Actions, want) {
		t.Fatalf("plan %+v; want %+v", p.Actions, want)
	}
}
