package pool

import (
	"strings"
	"testing"
	"time"
)

// noPrefixes starts a prefix-mode node whose subnet has had no free /28
// since now, for the next ten minutes.
func noPrefixes(t *testing.T, l Limits, c Config) *sim {
	s := newSim(t, l, c)
	s.in.Snapshot.NoPrefixesUntil = s.in.Now.Add(10 * time.Minute)
	return s
}

func TestFallbackWarmPrefixTargetGrowsSinglesWithinSlotsAndENIs(t *testing.T) {
	c := pdConfig()
	c.WarmPrefixTarget = 1 // as WARM_IP_TARGET=16
	s := noPrefixes(t, t3small, c)
	p := s.plan()
	want := []Action{
		{Kind: Assign, ENIID: "eni-0001", DeviceIndex: 0, Count: 3},
		{Kind: CreateENI, DeviceIndex: 1, Count: 3},
		{Kind: CreateENI, DeviceIndex: 2, Count: 3},
	}
	if !sameActions(p.Actions, want) || anyPrefixes(p.Actions) {
		t.Fatalf("actions %+v; want %+v as single addresses", p.Actions, want)
	}
	if p.Figures.Shortfall != 16 || p.Figures.Mode != ModePrefix ||
		p.Figures.Policy != "WARM_PREFIX_TARGET=1 (single IPs: no free /28 until 12:10:00)" {
		t.Errorf("figures %+v", p.Figures)
	}
	s.apply(p)
	if p := s.plan(); !p.Empty() || p.Figures.Shortfall != 7 {
		t.Fatalf("every slot of every ENI is used: %+v; want no growth, 7 short", p)
	}
	if got := s.count(); got.slots != 9 || got.free != 9 {
		t.Errorf("%d slots, %d free; want 9 and 9", got.slots, got.free)
	}
}

func TestFallbackRespectsMaxENIAndMaxPods(t *testing.T) {
	c := pdConfig()
	c.WarmPrefixTarget, c.MaxENI = 1, 1
	s := noPrefixes(t, t3small, c)
	if p := s.plan(); !sameActions(p.Actions, []Action{{Kind: Assign, ENIID: "eni-0001", Count: 3}}) {
		t.Errorf("MAX_ENI=1: %+v; want 3 addresses on the primary ENI only", p.Actions)
	}
	c.MaxENI, c.MaxPods = 0, 5
	s = noPrefixes(t, p3dn24xl, c)
	s.steady()
	if got := s.count(); got.held() != 5 || got.slots != 5 {
		t.Errorf("max pods 5: %d held in %d slots; want 5 and 5 (no prefix overshoot)", got.held(), got.slots)
	}
}

func TestFallbackWarmPrefixTargetZeroKeepsOneFreeAddress(t *testing.T) {
	s := noPrefixes(t, t3small, pdConfig())
	s.steady()
	s.addPods(2)
	if got := s.count(); got.held() != 3 || got.free != 1 || got.slots != 3 {
		t.Fatalf("2 pods: %d held, %d free, %d slots; want 3, 1, 3", got.held(), got.free, got.slots)
	}
}

// The IP targets keep their meaning; only the rounding up to prefixes goes.
func TestFallbackIPTargetsGrowExactly(t *testing.T) {
	c := pdConfig()
	c.WarmIPTarget, c.MinIPTarget = 5, 10
	s := noPrefixes(t, p3dn24xl, c)
	p := s.plan()
	if !sameActions(p.Actions, []Action{{Kind: Assign, ENIID: "eni-0001", Count: 10}}) || anyPrefixes(p.Actions) {
		t.Fatalf("fresh node: %+v; want one Assign of 10 addresses", p.Actions)
	}
	if !strings.HasPrefix(p.Figures.Policy, "WARM_IP_TARGET=5 MINIMUM_IP_TARGET=10 (single IPs:") {
		t.Errorf("policy %q", p.Figures.Policy)
	}
	s.apply(p)
	s.addPods(12)
	if got := s.count(); got.held() != 17 || got.free != 5 {
		t.Fatalf("12 pods: %d held %d free; want 17 and 5", got.held(), got.free)
	}
}

// When the fallback ends prefix growth resumes; the /32s it leaves as excess
// go back once the release delay has passed, and nothing grows after that.
func TestFallbackEndResumesPrefixesAndReleasesSinglesLater(t *testing.T) {
	c := pdConfig()
	c.WarmPrefixTarget = 1
	s := noPrefixes(t, p3dn24xl, c)
	s.steady()
	s.addPods(3)
	if got := s.count(); got.slots != 19 || got.free != 16 {
		t.Fatalf("3 pods in the fallback: %d /32s, %d free; want 19 and 16", got.slots, got.free)
	}
	s.advance(10 * time.Minute)
	p := s.plan()
	if !sameActions(p.Actions, []Action{{Kind: Assign, ENIID: "eni-0001", Count: 1}}) || !p.Actions[0].Prefixes {
		t.Fatalf("fallback over: %+v; want one prefix assigned", p.Actions)
	}
	s.apply(p)
	if p := s.plan(); !p.Empty() || p.Figures.Excess != 16 {
		t.Fatalf("the free /32s are excess but must wait the release delay: %+v", p)
	}
	s.advance(c.ReleaseDelay)
	p = s.plan()
	if len(p.Actions) != 1 || p.Actions[0].Kind != Unassign || len(p.Actions[0].Release) != 16 || p.Actions[0].Prefixes {
		t.Fatalf("after the delay: %+v; want the 16 free /32s unassigned", p.Actions)
	}
	s.apply(p)
	for range 3 {
		s.advance(c.ReleaseDelay)
		if p := s.plan(); !p.Empty() {
			t.Fatalf("a settled pool planned %+v", p.Actions)
		}
	}
	if got := s.count(); got.held() != 19 || got.free != 16 || got.slots != 4 {
		t.Errorf("settled: %d held, %d free, %d slots; want 19, 16, 4 (3 used /32s and a prefix)",
			got.held(), got.free, got.slots)
	}
}

// During the fallback a release is checked against the prefix rule too: the
// whole free prefix stays (the rule would grow it back once /28s are free
// again), the excess /32s go.
func TestFallbackKeepsTheWholeFreePrefix(t *testing.T) {
	c := pdConfig()
	c.WarmPrefixTarget = 1
	s := noPrefixes(t, p3dn24xl, c)
	primary := &s.in.Snapshot.ENIs[0]
	for range 16 {
		primary.Blocks = append(primary.Blocks, s.block(false))
	}
	primary.Blocks = append(primary.Blocks, s.block(true))
	if p := s.plan(); !p.Empty() || p.Figures.Excess != 16 {
		t.Fatalf("16 /32s and a whole prefix free: %+v; want 16 excess, nothing yet", p)
	}
	s.advance(c.ReleaseDelay)
	p := s.plan()
	if len(p.Actions) != 1 || len(p.Actions[0].Release) != 16 || p.Actions[0].Prefixes {
		t.Fatalf("plan %+v; want the 16 /32s released, the prefix kept", p.Actions)
	}
	for _, cidr := range p.Actions[0].Release {
		if cidr.Bits() != 32 {
			t.Fatalf("released %s", cidr)
		}
	}
}

func TestFallbackHonoursTheSubnetBackOffAndSecondaryIPMode(t *testing.T) {
	c := pdConfig()
	s := noPrefixes(t, t3small, c)
	s.in.Snapshot.GrowBlockedUntil = s.in.Now.Add(time.Minute)
	if p := s.plan(); !p.Empty() || p.Figures.Shortfall != 1 {
		t.Errorf("back-off: %+v; want no growth, shortfall 1", p)
	}
	c.PrefixDelegation = false
	s = noPrefixes(t, t3small, c)
	if p := s.plan(); strings.Contains(p.Figures.Policy, "single IPs") || len(p.Actions) != 1 || p.Actions[0].Count != 3 {
		t.Errorf("secondary-IP mode ignores the fallback: %+v", p)
	}
}

func anyPrefixes(acts []Action) bool {
	for _, a := range acts {
		if a.Prefixes {
			return true
		}
	}
	return false
}
