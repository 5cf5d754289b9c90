package pool

import (
	"net/netip"
	"slices"
	"testing"
	"time"
)

var (
	v6Now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	p80   = netip.MustParsePrefix("fd00:ec2:0:1:2::/80")
)

func ip(s string) netip.Addr { return netip.MustParseAddr(s) }

func held(state State, since time.Time, addrs ...string) []Held {
	var out []Held
	for _, a := range addrs {
		out = append(out, Held{IP: ip(a), State: state, Since: since})
	}
	return out
}

func sortHeld(h []Held) []Held {
	slices.SortFunc(h, func(a, b Held) int { return a.IP.Compare(b.IP) })
	return h
}

func TestPickIPv6LowestSkippingTheNetworkAddress(t *testing.T) {
	got, ok := PickIPv6(p80, nil, v6Now, DefaultCooldown)
	if !ok || got != ip("fd00:ec2:0:1:2::1") {
		t.Fatalf("empty pool: %v %v, want ::1 (never the /80's network address)", got, ok)
	}
	h := held(Assigned, v6Now, "fd00:ec2:0:1:2::1", "fd00:ec2:0:1:2::2", "fd00:ec2:0:1:2::4")
	if got, _ := PickIPv6(p80, h, v6Now, DefaultCooldown); got != ip("fd00:ec2:0:1:2::3") {
		t.Fatalf("hole at ::3: got %v", got)
	}
}

func TestPickIPv6CoolingAddressesWaitTheirCooldown(t *testing.T) {
	h := sortHeld(append(held(Assigned, v6Now, "fd00:ec2:0:1:2::1"),
		held(Cooling, v6Now.Add(-10*time.Second), "fd00:ec2:0:1:2::2")...))
	if got, _ := PickIPv6(p80, h, v6Now, 30*time.Second); got != ip("fd00:ec2:0:1:2::3") {
		t.Fatalf("::2 cools for 20s more: got %v", got)
	}
	if got, _ := PickIPv6(p80, h, v6Now.Add(20*time.Second), 30*time.Second); got != ip("fd00:ec2:0:1:2::2") {
		t.Fatalf("::2 has cooled: got %v", got)
	}
}

func TestPickIPv6IsDeterministicAndIgnoresOtherPrefixes(t *testing.T) {
	h := sortHeld(append(held(Assigned, v6Now, "fd00:ec2:0:1:1::1", "fd00:ec2:0:1:1::2", "fd00:ec2:0:1:2::1"),
		held(Assigned, v6Now, "fd00:ec2:0:1:3::5")...))
	first, _ := PickIPv6(p80, h, v6Now, DefaultCooldown)
	for range 5 {
		if got, _ := PickIPv6(p80, h, v6Now, DefaultCooldown); got != first {
			t.Fatalf("not deterministic: %v then %v", first, got)
		}
	}
	if first != ip("fd00:ec2:0:1:2::2") {
		t.Fatalf("got %v, want ::2 of the /80 (others' addresses ignored)", first)
	}
}

// When the /80 is replaced and EC2 hands the same /80 back, the /128s pods
// kept from the old one are still held: none is handed out twice.
func TestPickIPv6ReplacedPrefixNeverDuplicates(t *testing.T) {
	old := held(Assigned, v6Now, "fd00:ec2:0:1:2::1", "fd00:ec2:0:1:2::2")
	got, _ := PickIPv6(p80, old, v6Now, DefaultCooldown) // the same /80 again
	if got != ip("fd00:ec2:0:1:2::3") {
		t.Fatalf("same /80 back: got %v", got)
	}
	other := netip.MustParsePrefix("fd00:ec2:0:1:7::/80")
	if got, _ := PickIPv6(other, old, v6Now, DefaultCooldown); got != ip("fd00:ec2:0:1:7::1") {
		t.Fatalf("another /80: got %v", got)
	}
}

func TestPickIPv6FullOrInvalid(t *testing.T) {
	tiny := netip.MustParsePrefix("fd00::/126") // ::1..::3 usable
	h := held(Assigned, v6Now, "fd00::1", "fd00::2", "fd00::3")
	if got, ok := PickIPv6(tiny, h, v6Now, 0); ok {
		t.Fatalf("full prefix gave %v", got)
	}
	if _, ok := PickIPv6(netip.Prefix{}, nil, v6Now, 0); ok {
		t.Fatal("zero prefix gave an address")
	}
	if _, ok := PickIPv6(netip.MustParsePrefix("100.64.0.0/28"), nil, v6Now, 0); ok {
		t.Fatal("IPv4 prefix gave an address")
	}
}

func TestPickEgressSkipsNetworkGatewayAndBroadcast(t *testing.T) {
	if got, _ := PickEgress(EgressV4Range, nil, v6Now, 0); got != ip("169.254.172.2") {
		t.Fatalf("v4 egress first: %v", got)
	}
	if got := EgressGateway(EgressV4Range); got != ip("169.254.172.1") {
		t.Fatalf("gateway %v", got)
	}
	if got, _ := PickEgress(EgressV6Range, nil, v6Now, 0); got != ip("fd00::ac:2") {
		t.Fatalf("v6 egress first: %v", got)
	}
	small := netip.MustParsePrefix("169.254.172.0/30") // .0 net, .1 gw, .2, .3 broadcast
	if got, ok := PickEgress(small, held(Assigned, v6Now, "169.254.172.2"), v6Now, 0); ok {
		t.Fatalf("handed out the broadcast address %v", got)
	}
	var all []Held
	for a := ip("169.254.172.2"); a != ip("169.254.175.255"); a = a.Next() {
		all = append(all, Held{IP: a, State: Assigned})
	}
	if got, ok := PickEgress(EgressV4Range, all, v6Now, 0); ok {
		t.Fatalf("full /22 gave %v", got)
	}
	if len(all) != 1021 {
		t.Fatalf("a /22 has %d egress addresses, want 1021", len(all))
	}
}

func TestPlanIPv6(t *testing.T) {
	a := netip.MustParsePrefix("fd00:ec2:0:1:1::/80")
	b := netip.MustParsePrefix("fd00:ec2:0:1:2::/80")
	c := netip.MustParsePrefix("fd00:ec2:0:1:3::/80")
	cases := []struct {
		name               string
		current            netip.Prefix
		ours, onENI, inUse []netip.Prefix
		keep               netip.Prefix
		assign, adopted    bool
		release            []netip.Prefix
	}{
		{name: "first pass, nothing on the ENI", assign: true},
		{name: "first pass reuses what EC2 lists", onENI: []netip.Prefix{c, b}, keep: b, adopted: true},
		{name: "at rest", current: a, ours: []netip.Prefix{a}, onENI: []netip.Prefix{a}, keep: a},
		{name: "removed behind the node's back", current: a, ours: []netip.Prefix{a}, assign: true},
		{name: "extra ours released, foreign kept", current: a, ours: []netip.Prefix{a, b},
			onENI: []netip.Prefix{a, b, c}, keep: a, release: []netip.Prefix{b}},
		{name: "extra ours still in use kept", current: a, ours: []netip.Prefix{a, b},
			onENI: []netip.Prefix{a, b}, inUse: []netip.Prefix{b}, keep: a},
	}
	for _, tc := range cases {
		p := PlanIPv6(tc.current, tc.ours, tc.onENI, tc.inUse)
		if p.Keep != tc.keep || p.Assign != tc.assign || p.Adopted != tc.adopted || !slices.Equal(p.Release, tc.release) {
			t.Errorf("%s: %+v", tc.name, p)
		}
	}
}

func TestFamilies(t *testing.T) {
	for _, tc := range []struct {
		c      Config
		family string
		egress netip.Prefix
	}{
		{Config{}, FamilyIPv4, netip.Prefix{}},
		{Config{V6Egress: true}, FamilyIPv4, EgressV6Range},
		{Config{IPv6: true, IPv4Off: true, V4Egress: true}, FamilyIPv6, EgressV4Range},
		{Config{IPv6: true, IPv4Off: true}, FamilyIPv6, netip.Prefix{}},
		{Config{IPv6: true, V4Egress: true, V6Egress: true}, FamilyDualStack, netip.Prefix{}},
	} {
		r, _ := tc.c.EgressRange()
		if tc.c.Family() != tc.family || r != tc.egress {
			t.Errorf("%+v: %s %v", tc.c, tc.c.Family(), r)
		}
	}
}

// IPv6 only: the IPv4 pool has no targets, so a pass plans nothing for it.
func TestIPv6OnlyPlansNoIPv4(t *testing.T) {
	in := Input{Limits: Limits{MaxENIs: 3, IPv4PerENI: 10}, Now: v6Now,
		Config:   Config{WarmENITarget: 1, Cooldown: DefaultCooldown, ReleaseDelay: DefaultReleaseDelay, IPv6: true, IPv4Off: true},
		Snapshot: Snapshot{ENIs: []ENI{{ID: "eni-0", Ready: true}}}}
	if p := Compute(in); len(p.Actions) != 0 {
		t.Fatalf("IPv6 only planned %+v", p.Actions)
	}
	if n := FreeTarget(in.Limits, in.Config); n != 0 {
		t.Fatalf("FreeTarget %d", n)
	}
	in.Config.IPv4Off = false // dual stack: the IPv4 targets apply as today
	if p := Compute(in); len(p.Actions) == 0 {
		t.Fatal("dual stack planned no IPv4 growth")
	}
}
