package pool

import "testing"

// A burst of pods that found the pool empty is served by one growth sized to
// all of them, not one address per pass.
func TestWaitingPodsAreServedInOneGrowth(t *testing.T) {
	c := Defaults()
	c.WarmIPTarget = 1
	s := newSim(t, p3dn24xl, c)
	s.steady()
	s.addPod() // the one free address is gone
	s.in.Waiting = 9
	p := s.plan()
	if len(p.Actions) != 1 || p.Actions[0].Kind != Assign || p.Actions[0].Count != 10 {
		t.Fatalf("9 waiting, WARM_IP_TARGET=1, 0 free: %+v; want one Assign of 10", p.Actions)
	}
	if p.Figures.Waiting != 9 || p.Figures.Shortfall != 10 {
		t.Errorf("figures %+v: want waiting 9, shortfall 10", p.Figures)
	}
	s.apply(p)
	s.in.Waiting = 0
	s.addPods(9) // the waiting pods take their addresses
	if got := s.count(); got.free != 1 || !s.plan().Empty() {
		t.Fatalf("after the burst: %d free, plan %+v; want 1 free and nothing to do", got.free, s.plan().Actions)
	}
}

func TestWaitingPodsInEachRule(t *testing.T) {
	cases := []struct {
		name      string
		config    func(*Config)
		limits    Limits
		wantAddrs int // addresses the growth adds for 20 waiting pods on a node with nothing free
	}{
		{"WARM_ENI_TARGET=1 fills whole ENIs", func(c *Config) {}, t2medium, 15},
		{"MINIMUM_IP_TARGET alone still serves them", func(c *Config) { c.MinIPTarget = 1 }, p3dn24xl, 20},
		{"prefixes round up", func(c *Config) { c.PrefixDelegation = true }, p3dn24xl, 32},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Defaults()
			tc.config(&c)
			s := newSim(t, tc.limits, c)
			s.in.Waiting = 20
			before := s.count().held()
			p := s.plan()
			s.apply(p)
			if got := s.count().held() - before; got != tc.wantAddrs {
				t.Fatalf("grew %d addresses for 20 waiting pods (%+v); want %d", got, p.Actions, tc.wantAddrs)
			}
		})
	}
}

func TestFreeTargetFollowsTheRuleInForce(t *testing.T) {
	c := Defaults()
	if got := FreeTarget(t2medium, c); got != 5 {
		t.Errorf("WARM_ENI_TARGET=1 on 5-address ENIs: %d, want 5", got)
	}
	c.WarmENITarget = 0
	if got := FreeTarget(t2medium, c); got != 1 {
		t.Errorf("WARM_ENI_TARGET=0: %d, want 1 (always one free)", got)
	}
	c.PrefixDelegation, c.WarmPrefixTarget = true, 2
	if got := FreeTarget(t2medium, c); got != 32 {
		t.Errorf("WARM_PREFIX_TARGET=2: %d, want 32", got)
	}
	c.WarmIPTarget, c.MinIPTarget = 3, 10
	if got := FreeTarget(t2medium, c); got != 3 {
		t.Errorf("WARM_IP_TARGET=3 wins: %d, want 3", got)
	}
}
