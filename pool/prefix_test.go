package pool

import (
	"net/netip"
	"testing"
)

func pdConfig() Config {
	c := Defaults()
	c.PrefixDelegation = true
	c.MaxPods = 110
	return c
}

func TestPrefixWarmPrefixTargetKeepsWholeFreePrefixes(t *testing.T) {
	c := pdConfig()
	c.WarmPrefixTarget = 1
	s := newSim(t, t3small, c)
	steps := []struct {
		pods, prefixes, free, enis int
	}{
		{0, 1, 16, 1},
		{1, 2, 31, 1},  // the first prefix is no longer whole: one more
		{16, 2, 16, 1}, // the second is whole and free
		{17, 3, 31, 1},
		{33, 4, 31, 2}, // ENI 0's 3 slots are full: a new ENI with the prefix
	}
	pods := 0
	s.steady()
	for _, st := range steps {
		s.addPods(st.pods - pods)
		pods = st.pods
		got := s.count()
		if got.slots != st.prefixes || got.free != st.free || len(s.in.Snapshot.ENIs) != st.enis {
			t.Fatalf("%d pods: %d prefixes, %d free, %d ENIs; want %d %d %d",
				pods, got.slots, got.free, len(s.in.Snapshot.ENIs), st.prefixes, st.free, st.enis)
		}
	}
}

func TestPrefixWarmPrefixTargetZeroKeepsOneFreeAddress(t *testing.T) {
	c := pdConfig()
	s := newSim(t, t3small, c)
	s.steady()
	if got := s.count(); got.slots != 1 || got.free != 16 {
		t.Fatalf("fresh node: %d prefixes %d free; want 1 and 16", got.slots, got.free)
	}
	s.addPods(16)
	if got := s.count(); got.slots != 2 || got.free != 16 {
		t.Fatalf("16 pods: %d prefixes %d free; want 2 and 16", got.slots, got.free)
	}
	for range 16 {
		s.delPod(0)
	}
	s.advance(c.Cooldown)
	s.plan()
	s.advance(c.ReleaseDelay)
	p := s.plan()
	if len(p.Actions) != 1 || len(p.Actions[0].Release) != 1 || !p.Actions[0].Prefixes {
		t.Fatalf("all pods gone: %+v; want one prefix released", p.Actions)
	}
	s.apply(p)
	s.advance(c.ReleaseDelay * 2)
	if p := s.plan(); !p.Empty() || p.Figures.Free != 16 {
		t.Fatalf("the last free prefix must stay: %+v", p)
	}
}

func TestPrefixWarmAndMinimumIPTargetsRoundUpToPrefixes(t *testing.T) {
	c := pdConfig()
	c.WarmIPTarget, c.MinIPTarget = 5, 10
	s := newSim(t, p3dn24xl, c)
	p := s.plan()
	if len(p.Actions) != 1 || p.Actions[0].Kind != Assign || p.Actions[0].Count != 1 || !p.Actions[0].Prefixes {
		t.Fatalf("fresh node: %+v; want one Assign of 1 prefix", p.Actions)
	}
	if p.Figures.Shortfall != 10 || p.Figures.Mode != ModePrefix {
		t.Errorf("figures %+v: want shortfall 10 addresses in prefix mode", p.Figures)
	}
	s.apply(p)
	s.addPods(12) // 4 free: 1 short, a whole prefix comes
	if got := s.count(); got.held() != 32 || got.free != 20 {
		t.Fatalf("12 pods: %d held %d free; want 32 and 20", got.held(), got.free)
	}
}

func TestPrefixMinimumIPTargetAloneHoldsWholePrefixes(t *testing.T) {
	c := pdConfig()
	c.MinIPTarget = 40
	s := newSim(t, t3small, c)
	s.steady()
	if got := s.count(); got.slots != 3 || got.held() != 48 {
		t.Fatalf("MINIMUM_IP_TARGET=40: %d prefixes, %d held; want 3 and 48", got.slots, got.held())
	}
}

func TestPrefixGrowthStopsAtMaxPods(t *testing.T) {
	c := pdConfig()
	c.MaxPods = 20 // ceil(20/16) = 2 prefixes at most
	c.WarmPrefixTarget = 1
	s := newSim(t, t3small, c)
	s.steady()
	s.addPods(17)
	p := s.plan()
	if got := s.count(); got.slots != 2 || !p.Empty() || p.Figures.Shortfall != 16 {
		t.Fatalf("%d prefixes, plan %+v; want 2 prefixes, no growth, shortfall shown", got.slots, p)
	}
}

func TestPrefixModeUsesLeftoverSecondaryIPs(t *testing.T) {
	c := pdConfig()
	c.WarmPrefixTarget = 1
	s := newSim(t, t3small, c)
	primary := &s.in.Snapshot.ENIs[0]
	primary.Blocks = append(primary.Blocks, s.block(false), s.block(false))
	p := s.plan()
	if p.Figures.Free != 2 || len(p.Actions) != 1 || p.Actions[0].Count != 1 || !p.Actions[0].Prefixes {
		t.Fatalf("two /32s, no prefix: %+v; want 2 free and one prefix assigned", p)
	}
	s.apply(p)
	ip, _ := s.addPod()
	if ip != primary.Blocks[0].Addrs[0].IP {
		t.Errorf("pod got %s; want the lowest block's %s", ip, primary.Blocks[0].Addrs[0].IP)
	}
	// The free /32 is excess (the whole free prefix meets the target); the
	// one in use stays.
	s.plan()
	s.advance(c.ReleaseDelay)
	p = s.plan()
	want := []Action{{Kind: Unassign, ENIID: primary.ID, Count: 1, Release: []netip.Prefix{primary.Blocks[1].CIDR}}}
	if !sameActions(p.Actions, want) || p.Actions[0].Prefixes {
		t.Fatalf("plan %+v; want the free /32 unassigned", p.Actions)
	}
}
