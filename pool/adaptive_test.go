package pool

import (
	"testing"
	"time"
)

// With pods arriving one every 10 s and a 60 s window, the grow that the
// last free address's pod triggers covers the next window's pods, and once
// arrivals stop the pool goes back to exactly WARM_IP_TARGET.
func TestAdaptiveGrowthSizesByArrivalsAndReturnsToTarget(t *testing.T) {
	c := Defaults()
	c.WarmIPTarget, c.AdaptiveWindow = 1, time.Minute
	s := newSim(t, p3dn24xl, c)
	s.steady()
	grows := 0
	for range 30 {
		s.advance(10 * time.Second)
		if _, ok := s.addPod(); !ok {
			t.Fatalf("pod %d found no address", s.podCount+1)
		}
		if p := s.plan(); !p.Empty() {
			grows++
			s.apply(p)
		}
	}
	if grows > 8 {
		t.Errorf("%d grows for 30 pods arriving every 10 s with a 60 s window; want at most 8", grows)
	}
	s.advance(time.Minute + time.Second) // the window empties
	s.steady()
	s.advance(c.ReleaseDelay)
	s.steady()
	if got := s.count().free; got != c.WarmIPTarget {
		t.Errorf("at rest %d free, want exactly WARM_IP_TARGET=%d", got, c.WarmIPTarget)
	}
}

func TestAdaptiveGrowthOffChangesNothing(t *testing.T) {
	c := Defaults()
	c.WarmIPTarget = 1
	s := newSim(t, p3dn24xl, c)
	s.steady()
	for range 5 {
		s.advance(10 * time.Second)
		s.addPod()
		p := s.plan()
		if len(p.Actions) != 1 || p.Actions[0].Count != 1 {
			t.Fatalf("without the window a pod's grow is one address, got %+v", p.Actions)
		}
		s.apply(p)
	}
}

func TestRecentArrivalsCountsTheWindowOnly(t *testing.T) {
	now := startTime
	blk := Block{Addrs: []Addr{
		{State: Assigned, Since: now.Add(-10 * time.Second)},
		{State: Assigned, Since: now.Add(-2 * time.Minute)},
		{State: Free, Since: now},
		{State: Cooling, Since: now},
	}}
	s := Snapshot{ENIs: []ENI{{Blocks: []Block{blk}}}}
	if got := RecentArrivals(s, DefaultPool, now, time.Minute); got != 1 {
		t.Errorf("RecentArrivals = %d, want 1", got)
	}
	if got := RecentArrivals(s, DefaultPool, now, 0); got != 0 {
		t.Errorf("RecentArrivals with the knob off = %d, want 0", got)
	}
}
