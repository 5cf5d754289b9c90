package pool

import (
	"fmt"
	"testing"
)

// The reference's documented behaviour, pod by pod from a fresh node.
func TestScenarioTableFromFreshNode(t *testing.T) {
	const unset = 0
	cases := []struct {
		inst                   string
		lim                    Limits
		warmENI, warmIP, minIP int
		pods                   int
		enis, held, unused     int
	}{
		{"t3.small", t3small, 1, unset, unset, 0, 1, 3, 3},
		{"t3.small", t3small, 1, unset, unset, 5, 3, 9, 4},
		{"t3.small", t3small, 1, unset, unset, 9, 3, 9, 0},
		{"t3.small", t3small, unset, 1, 1, 0, 1, 1, 1},
		{"t3.small", t3small, unset, 1, 1, 5, 2, 6, 1},
		{"t3.small", t3small, unset, 1, 1, 9, 3, 9, 0},
		{"t3.small", t3small, unset, 2, 5, 0, 2, 5, 5},
		{"t3.small", t3small, unset, 2, 5, 5, 3, 7, 2},
		{"t3.small", t3small, unset, 2, 5, 9, 3, 9, 0},
		{"p3dn.24xlarge", p3dn24xl, 1, unset, unset, 0, 1, 49, 49},
		{"p3dn.24xlarge", p3dn24xl, 1, unset, unset, 3, 2, 98, 95},
		{"p3dn.24xlarge", p3dn24xl, 1, unset, unset, 95, 3, 147, 52},
		{"p3dn.24xlarge", p3dn24xl, unset, 5, 10, 0, 1, 10, 10},
		{"p3dn.24xlarge", p3dn24xl, unset, 5, 10, 7, 1, 12, 5},
		{"p3dn.24xlarge", p3dn24xl, unset, 5, 10, 15, 1, 20, 5},
		{"p3dn.24xlarge", p3dn24xl, unset, 5, 10, 45, 2, 50, 5},
	}
	for _, tc := range cases {
		name := fmt.Sprintf("%s/WARM_ENI=%d/WARM_IP=%d/MIN_IP=%d/%d_pods", tc.inst, tc.warmENI, tc.warmIP, tc.minIP, tc.pods)
		t.Run(name, func(t *testing.T) {
			c := Defaults()
			if tc.warmENI != unset {
				c.WarmENITarget = tc.warmENI
			}
			c.WarmIPTarget, c.MinIPTarget = tc.warmIP, tc.minIP
			s := newSim(t, tc.lim, c)
			s.steady()
			s.addPods(tc.pods)
			got := s.count()
			if len(s.in.Snapshot.ENIs) != tc.enis || got.held() != tc.held || got.free != tc.unused {
				t.Errorf("ENIs %d held %d unused %d; want %d %d %d",
					len(s.in.Snapshot.ENIs), got.held(), got.free, tc.enis, tc.held, tc.unused)
			}
			if got.assigned != tc.pods {
				t.Errorf("%d pods hold addresses, want %d", got.assigned, tc.pods)
			}
		})
	}
}

func TestT2MediumWarmIPTargetOneKeepsExactlyOneFree(t *testing.T) {
	c := Defaults()
	c.WarmIPTarget = 1
	s := newSim(t, t2medium, c)
	s.steady()
	s.addPods(2)
	if got := s.count(); got.free != 1 || len(s.in.Snapshot.ENIs) != 1 {
		t.Fatalf("after 2 pods: %d free on %d ENIs, want 1 free on 1", got.free, len(s.in.Snapshot.ENIs))
	}
	s.addPods(3)
	if got := s.count(); got.free != 1 || len(s.in.Snapshot.ENIs) != 2 {
		t.Fatalf("after 5 pods: %d free on %d ENIs, want 1 free on 2", got.free, len(s.in.Snapshot.ENIs))
	}
}

func TestT2MediumDefaultWarmENIAddsASecondFullENI(t *testing.T) {
	s := newSim(t, t2medium, Defaults())
	s.steady()
	s.addPods(2)
	if got := s.count(); got.held() != 10 || len(s.in.Snapshot.ENIs) != 2 {
		t.Fatalf("after 2 pods: %d held on %d ENIs, want 10 on 2", got.held(), len(s.in.Snapshot.ENIs))
	}
}

func TestT2MediumWarmIPTargetFiveAsksForTheShortfallInOneAction(t *testing.T) {
	c := Defaults()
	c.WarmIPTarget = 5
	s := newSim(t, t2medium, c)
	s.steady()
	if got := s.count(); got.free != 5 {
		t.Fatalf("fresh node: %d free, want 5", got.free)
	}
	s.addPods(1) // ENI 0 is full: a second ENI comes with 1 address, room for 4
	for range 3 {
		s.addPod()
	}
	p := s.plan()
	eni1 := s.eniAt(1)
	if len(p.Actions) != 1 || p.Actions[0].Kind != Assign || p.Actions[0].Count != 3 || p.Actions[0].ENIID != eni1.ID {
		t.Fatalf("after 3 pods: %+v; want one Assign of 3 on %s", p.Actions, eni1.ID)
	}
	if p.Figures.Shortfall != 3 || p.Figures.Free != 2 {
		t.Errorf("figures %+v: want shortfall 3, free 2", p.Figures)
	}
}

func TestT2MediumShortfallSpillsOntoOneNewENI(t *testing.T) {
	c := Defaults()
	c.WarmIPTarget = 5
	s := newSim(t, t2medium, c)
	s.steady()
	s.addPods(1)
	eni1 := s.eniAt(1)
	eni1.Blocks = append(eni1.Blocks, s.block(false), s.block(false), s.block(false)) // room for 1 only
	for range 6 {
		s.addPod()
	}
	p := s.plan() // 2 free: 3 short, 1 fits on ENI 1
	want := []Action{
		{Kind: Assign, ENIID: eni1.ID, DeviceIndex: 1, Count: 1},
		{Kind: CreateENI, DeviceIndex: 2, Count: 2},
	}
	if !sameActions(p.Actions, want) {
		t.Fatalf("plan %+v; want %+v", p.Actions, want)
	}
}

// sameActions compares kind, ENI, device, count and release list.
func sameActions(got, want []Action) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Kind != w.Kind || g.ENIID != w.ENIID || g.DeviceIndex != w.DeviceIndex || g.Count != w.Count ||
			fmt.Sprint(g.Release) != fmt.Sprint(w.Release) {
			return false
		}
	}
	return true
}

func TestWarmENITargetZeroGrowsByWholeENIsWithoutLooping(t *testing.T) {
	c := Defaults()
	c.WarmENITarget = 0
	s := newSim(t, t2medium, c)
	s.steady()
	if got := s.count(); got.held() != 5 || got.free != 5 {
		t.Fatalf("fresh node: %+v; want one full ENI", got)
	}
	s.addPods(5)
	if got := s.count(); got.held() != 10 || len(s.in.Snapshot.ENIs) != 2 {
		t.Fatalf("5 pods: %d held on %d ENIs; want a second full ENI", got.held(), len(s.in.Snapshot.ENIs))
	}
	for range 10 { // the reference frees the fresh ENI and allocates it again here
		s.advance(c.ReleaseDelay)
		if p := s.plan(); !p.Empty() {
			t.Fatalf("no pod change, yet %+v", p.Actions)
		}
	}
}

func TestMaxENIAndTheInstanceLimitCapGrowth(t *testing.T) {
	for _, maxENI := range []int{0, 2} {
		c := Defaults()
		c.WarmIPTarget, c.MaxENI = 20, maxENI
		s := newSim(t, t3small, c)
		s.steady()
		want := EffectiveMaxENIs(t3small, c)
		got := s.count()
		if len(s.in.Snapshot.ENIs) != want || got.free != want*3 {
			t.Errorf("MAX_ENI=%d: %d ENIs with %d free; want %d full ENIs", maxENI, len(s.in.Snapshot.ENIs), got.free, want)
		}
		if p := s.plan(); p.Figures.Shortfall != 20-want*3 || p.Figures.MaxENIs != want {
			t.Errorf("MAX_ENI=%d: figures %+v; want the shortfall shown", maxENI, p.Figures)
		}
	}
}
