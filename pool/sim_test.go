package pool

import (
	"fmt"
	"net/netip"
	"slices"
	"time"
)

// sim is a small in-test EC2: it applies plans to a snapshot the way the
// reconciler would, hands out sequential addresses from 100.64.0.0/10, and
// fails the test when a plan breaks a limit or takes an address in use.
type sim struct {
	t        tb
	in       Input
	nextIP   netip.Addr // next /32, from 100.64.0.0
	nextPfx  netip.Addr // next /28, from 100.96.0.0
	nextENI  int
	lagging  bool // Unassign leaves blocks Releasing until settle
	podCount int
}

// tb is what the simulator needs of *testing.T and *rapid.T.
type tb interface {
	Helper()
	Fatalf(format string, args ...any)
}

var (
	t3small   = Limits{MaxENIs: 3, IPv4PerENI: 4}
	t2medium  = Limits{MaxENIs: 3, IPv4PerENI: 6}
	p3dn24xl  = Limits{MaxENIs: 15, IPv4PerENI: 50}
	startTime = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
)

// newSim starts a fresh node: only its primary ENI, with no pod addresses.
func newSim(t tb, l Limits, c Config) *sim {
	s := &sim{
		t:       t,
		in:      Input{Limits: l, Config: c, Now: startTime},
		nextIP:  netip.MustParseAddr("100.64.0.0"),
		nextPfx: netip.MustParseAddr("100.96.0.0"),
	}
	s.in.Snapshot.ENIs = []ENI{s.newENI(0)}
	return s
}

func (s *sim) newENI(dev int) ENI {
	s.nextENI++
	return ENI{
		ID: fmt.Sprintf("eni-%04d", s.nextENI), DeviceIndex: dev, Ready: true, CreatedAt: s.in.Now,
		PrimaryIP: netip.AddrFrom4([4]byte{100, 127, byte(s.nextENI >> 8), byte(s.nextENI)}),
	}
}

func (s *sim) block(prefix bool) Block {
	if !prefix {
		b := Block{CIDR: netip.PrefixFrom(s.nextIP, 32), Addrs: []Addr{{IP: s.nextIP, State: Free, Since: s.in.Now}}}
		s.nextIP = s.nextIP.Next()
		return b
	}
	b := Block{CIDR: netip.PrefixFrom(s.nextPfx, 28)}
	for range PrefixSize {
		b.Addrs = append(b.Addrs, Addr{IP: s.nextPfx, State: Free, Since: s.in.Now})
		s.nextPfx = s.nextPfx.Next()
	}
	return b
}

// plan computes a plan and persists its ExcessSince, as the reconciler does.
func (s *sim) plan() Plan {
	p := Compute(s.in)
	s.in.Snapshot.ExcessSince = p.ExcessSince
	return p
}

// steady plans and applies until a plan asks for nothing.
func (s *sim) steady() {
	s.t.Helper()
	for range 100 {
		p := s.plan()
		if p.Empty() {
			return
		}
		s.apply(p)
	}
	s.t.Fatalf("no steady state after 100 plans")
}

func (s *sim) eniAt(dev int) *ENI {
	for i := range s.in.Snapshot.ENIs {
		if s.in.Snapshot.ENIs[i].DeviceIndex == dev {
			return &s.in.Snapshot.ENIs[i]
		}
	}
	return nil
}

func (s *sim) apply(p Plan) {
	s.t.Helper()
	for _, a := range p.Actions {
		s.applyOne(a)
	}
}

func (s *sim) applyOne(a Action) {
	s.t.Helper()
	maxENIs, perENI, _ := PodLimits(s.in.Limits, s.in.Config)
	if a.Reason == "" {
		s.t.Fatalf("%s without a reason", a.Kind)
	}
	switch a.Kind {
	case CreateENI:
		if s.eniAt(a.DeviceIndex) != nil || len(s.in.Snapshot.ENIs) >= maxENIs || a.Count < 1 || a.Count > perENI {
			s.t.Fatalf("bad create %+v with %d ENIs (max %d, %d per ENI)", a, len(s.in.Snapshot.ENIs), maxENIs, perENI)
		}
		e := s.newENI(a.DeviceIndex)
		e.Profile = a.Profile
		for range a.Count {
			e.Blocks = append(e.Blocks, s.block(a.Prefixes))
		}
		s.in.Snapshot.ENIs = append(s.in.Snapshot.ENIs, e)
		slices.SortFunc(s.in.Snapshot.ENIs, func(x, y ENI) int { return x.DeviceIndex - y.DeviceIndex })
	case Assign:
		e := s.eniAt(a.DeviceIndex)
		if e == nil || e.ID != a.ENIID || a.Count < 1 || len(e.Blocks)+a.Count > perENI {
			s.t.Fatalf("bad assign %+v (%d per ENI)", a, perENI)
		}
		for range a.Count {
			e.Blocks = append(e.Blocks, s.block(a.Prefixes))
		}
	case Unassign:
		s.unassign(a)
	case DeleteENI:
		s.deleteENI(a)
	default:
		s.t.Fatalf("unknown action %q", a.Kind)
	}
}

func (s *sim) unassign(a Action) {
	s.t.Helper()
	e := s.eniAt(a.DeviceIndex)
	if e == nil || e.ID != a.ENIID || len(a.Release) == 0 {
		s.t.Fatalf("bad unassign %+v", a)
	}
	for _, cidr := range a.Release {
		i := slices.IndexFunc(e.Blocks, func(b Block) bool { return b.CIDR == cidr })
		if i < 0 || e.Blocks[i].Releasing {
			s.t.Fatalf("unassign of %s: not on %s or already releasing", cidr, e.ID)
		}
		s.mustBeUnused(e.Blocks[i])
		e.Blocks[i].Releasing = true
	}
	if !s.lagging {
		s.settle()
	}
}

// settle finishes every Unassign in flight.
func (s *sim) settle() {
	for i := range s.in.Snapshot.ENIs {
		e := &s.in.Snapshot.ENIs[i]
		e.Blocks = slices.DeleteFunc(e.Blocks, func(b Block) bool { return b.Releasing })
	}
}

func (s *sim) deleteENI(a Action) {
	s.t.Helper()
	e := s.eniAt(a.DeviceIndex)
	if e == nil || e.ID != a.ENIID || e.Primary() {
		s.t.Fatalf("bad delete %+v", a)
	}
	for _, b := range e.Blocks {
		if b.Releasing {
			s.t.Fatalf("delete of %s with an unassign in flight", e.ID)
		}
		s.mustBeUnused(b)
	}
	s.in.Snapshot.ENIs = slices.DeleteFunc(s.in.Snapshot.ENIs, func(x ENI) bool { return x.ID == a.ENIID })
}

func (s *sim) mustBeUnused(b Block) {
	s.t.Helper()
	for _, ad := range b.Addrs {
		if !Usable(ad, s.in.Now, s.in.Config.Cooldown) {
			s.t.Fatalf("released %s, which is %s since %s (now %s)", ad.IP, ad.State, ad.Since, s.in.Now)
		}
	}
}
