package reconcile

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"vpc-cni/cloud"
	"vpc-cni/settings"
	"vpc-cni/sim/ec2sim"
	"vpc-cni/store"
)

func v6OnlyEnv() env {
	return env{settings.EnableIPv6: "true", settings.EnableIPv4: "false", settings.PrefixDelegation: "true"}
}

// primary is the node's primary ENI in the emulator.
func (n *node) primary() (id string, prefixes []netip.Prefix) {
	n.t.Helper()
	st := n.sim.State()
	for _, e := range st.ENIs {
		if e.DeviceIndex == 0 {
			return e.ID, e.IPv6Prefixes
		}
	}
	n.t.Fatal("no primary ENI in the emulator")
	return "", nil
}

func (n *node) ipv6Pool() store.IPv6Pool {
	n.t.Helper()
	var p store.IPv6Pool
	if err := n.st.View(func(tx *store.Tx) (err error) { p, _, err = tx.IPv6Pool(); return err }); err != nil {
		n.t.Fatal(err)
	}
	return p
}

// take6 takes as the plugin's ADD does, under the node's knobs.
func (n *node) take6(key string) (store.Assignment, error) {
	e, err := settings.Resolve(settings.Overrides{}, settings.Inputs{Env: n.env.lookup})
	if err != nil {
		return store.Assignment{}, err
	}
	in := store.PodPoolOf(e.Specs()[0])
	in.Boot = BootID()
	res, err := n.st.TakeForPod(store.Assignment{Key: key}, n.clock.Now(), in, false)
	return res.Assignment, err
}

// sdk is a second client on the emulator: "someone else" changing EC2.
func sdk(t *testing.T) *cloud.Client {
	cl, err := cloud.New(context.Background(), cloud.Options{MaxBackoff: time.Millisecond, HTTPTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func TestIPv6FirstPassAssignsOneSlash80ThenRestsWithoutEC2(t *testing.T) {
	n := newNode(t, "t3.small", v6OnlyEnv())
	rep := n.pass()
	c := n.sim.Counters()
	if c["AssignIpv6Addresses"] != 1 || rep.IPv6 == nil || rep.IPv6.Action != IPv6Assigned {
		t.Fatalf("first pass: counters %v, report %+v", c, rep.IPv6)
	}
	if c["CreateNetworkInterface"]+c["AssignPrivateIpAddresses"] != 0 {
		t.Fatalf("IPv6 only grew the IPv4 pool: %v", c)
	}
	id, onENI := n.primary()
	p := n.ipv6Pool()
	if len(onENI) != 1 || p.Prefix != onENI[0] || p.ENIID != id || p.Prefix.Bits() != 80 || !slices.Equal(p.Ours, onENI) {
		t.Fatalf("emulator %v, store %+v", onENI, p)
	}
	n.sim.ResetCounters()
	n.clock.Advance(time.Minute)
	rep = n.pass()
	if got := n.sim.Counters(); ec2Calls(got) != 0 || rep.Observed != FromIMDS || rep.IPv6.Action != IPv6Kept {
		t.Fatalf("at rest: %v, observed %q, %+v", got, rep.Observed, rep.IPv6)
	}
	a, err := n.take6("c1/eth0")
	if err != nil || a.IPv6 != p.Prefix.Addr().Next() || a.IP.IsValid() || a.EgressIP != netip.MustParseAddr("169.254.172.2") {
		t.Fatalf("pod: %+v %v", a, err)
	}
}

// The first pass reuses a /80 EC2 already lists on the primary ENI.
func TestIPv6FirstPassReusesAListedSlash80(t *testing.T) {
	n := newNode(t, "t3.small", v6OnlyEnv())
	id, _ := n.primary()
	had, err := sdk(t).AssignIPv6Prefix(ctxFor(t), id)
	if err != nil {
		t.Fatal(err)
	}
	n.sim.ResetCounters()
	rep := n.pass()
	if c := n.sim.Counters(); c["AssignIpv6Addresses"] != 0 || rep.IPv6.Action != IPv6Adopted || n.ipv6Pool().Prefix != had {
		t.Fatalf("counters %v, %+v, store %+v", c, rep.IPv6, n.ipv6Pool())
	}
	if len(n.ipv6Pool().Ours) != 0 {
		t.Fatal("an adopted /80 counted as vpc-cni's own")
	}
	n.wantIPv6Events(t, []string{EventIPv6Adopted}, [][]string{{had.String(), id}})
}

// A /80 removed behind the node's back is found at rest (IMDS no longer
// lists it, so the pass reads EC2) and repaired by that pass; the pods of
// the old /80 keep their records and no address is handed out twice, even
// when EC2 hands the same /80 back.
func TestIPv6RemovedSlash80IsRepairedWithoutDuplicates(t *testing.T) {
	n := newNode(t, "t3.small", v6OnlyEnv())
	n.pass()
	old := n.ipv6Pool().Prefix
	var pods []store.Assignment
	for _, k := range []string{"c1/eth0", "c2/eth0", "c3/eth0"} {
		a, err := n.take6(k)
		if err != nil {
			t.Fatal(err)
		}
		pods = append(pods, a)
	}
	id, _ := n.primary()
	if err := sdk(t).UnassignIPv6(ctxFor(t), id, nil, []netip.Prefix{old}); err != nil {
		t.Fatal(err)
	}
	n.sim.ResetCounters()
	n.clock.Advance(time.Minute)
	rep := n.pass()
	c := n.sim.Counters()
	if !strings.HasPrefix(rep.Observed, FromEC2) || c["AssignIpv6Addresses"] != 1 || rep.IPv6.Action != IPv6Repaired ||
		rep.IPv6.Previous != old || !slices.ContainsFunc(rep.Findings, func(f Finding) bool { return f.Kind == "ipv6-prefix-repaired" }) {
		t.Fatalf("repair pass: observed %q, counters %v, %+v, findings %+v", rep.Observed, c, rep.IPv6, rep.Findings)
	}
	_, onENI := n.primary()
	now := n.ipv6Pool().Prefix
	if len(onENI) != 1 || onENI[0] != now {
		t.Fatalf("emulator %v, store %v", onENI, now)
	}
	if len(n.assignments()) != 3 {
		t.Fatalf("pods of the old /80 lost their records: %+v", n.assignments())
	}
	seen := map[netip.Addr]string{}
	for _, a := range pods {
		seen[a.IPv6] = a.Key
	}
	for i := range 5 {
		a, err := n.take6("new" + string(rune('a'+i)) + "/eth0")
		if err != nil {
			t.Fatal(err)
		}
		if other, dup := seen[a.IPv6]; dup || !now.Contains(a.IPv6) {
			t.Fatalf("%s got %s (held by %q, new /80 %s)", a.Key, a.IPv6, other, now)
		}
		seen[a.IPv6] = a.Key
	}
	if err := n.st.View(func(tx *store.Tx) error { return tx.Check() }); err != nil {
		t.Fatal(err)
	}
	t.Logf("old /80 %s, new %s (EC2 gave the same back: %v)", old, now, old == now)
}

// Extra /80s vpc-cni assigned go back to EC2 once no pod holds an address
// in them; one vpc-cni did not assign stays.
func TestIPv6ExtraSlash80sAreReleased(t *testing.T) {
	n := newNode(t, "t3.small", v6OnlyEnv())
	n.pass()
	a := n.ipv6Pool().Prefix
	pod, err := n.take6("c1/eth0")
	if err != nil {
		t.Fatal(err)
	}
	id, _ := n.primary()
	other := sdk(t)
	if err := other.UnassignIPv6(ctxFor(t), id, nil, []netip.Prefix{a}); err != nil {
		t.Fatal(err)
	}
	// Park a on a detached ENI so the repair gets another /80 (the
	// emulator hands out the lowest free one, a itself).
	parked, err := n.sim.AddENI(ec2sim.ENISpec{Detached: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.AssignIPv6(ctxFor(t), parked.ID, cloud.IPv6Request{Prefixes: []netip.Prefix{a}}); err != nil {
		t.Fatal(err)
	}
	n.clock.Advance(time.Minute)
	n.pass() // repaired: a new /80 b, and a remembered as vpc-cni's
	b := n.ipv6Pool().Prefix
	// a comes back (EC2 had lagged, say), and someone adds a foreign /80.
	if err := other.UnassignIPv6(ctxFor(t), parked.ID, nil, []netip.Prefix{a}); err != nil {
		t.Fatal(err)
	}
	if _, err := other.AssignIPv6(ctxFor(t), id, cloud.IPv6Request{Prefixes: []netip.Prefix{a}}); err != nil {
		t.Fatal(err)
	}
	foreign, err := other.AssignIPv6Prefix(ctxFor(t), id)
	if err != nil {
		t.Fatal(err)
	}
	n.clock.Advance(time.Minute)
	if rep := n.pass(); len(rep.IPv6.Released) != 0 || rep.IPv6.Prefix != b {
		t.Fatalf("released %v while pod %s holds %s", rep.IPv6.Released, pod.Key, pod.IPv6)
	}
	n.delPod(pod.Key)
	n.sim.ResetCounters()
	n.clock.Advance(time.Minute)
	rep := n.pass()
	_, onENI := n.primary()
	if !slices.Equal(rep.IPv6.Released, []netip.Prefix{a}) || n.sim.Counters()["UnassignIpv6Addresses"] != 1 ||
		!slices.Contains(onENI, b) || !slices.Contains(onENI, foreign) || slices.Contains(onENI, a) {
		t.Fatalf("released %v, on the ENI %v (a %s, b %s, foreign %s)", rep.IPv6.Released, onENI, a, b, foreign)
	}
	n.wantIPv6Events(t, []string{EventIPv6Assigned, EventIPv6Repaired, EventIPv6Released},
		[][]string{{a.String(), id}, {a.String(), b.String(), id}, {a.String(), id}})
}

// wantIPv6Events checks the /80 events in the store: these kinds in this
// order, each message naming its strings.
func (n *node) wantIPv6Events(t *testing.T, kinds []string, names [][]string) {
	t.Helper()
	var events []store.Event
	if err := n.st.View(func(tx *store.Tx) (err error) { events, err = tx.Events(0); return err }); err != nil {
		t.Fatal(err)
	}
	var got []store.Event
	for _, e := range events {
		if strings.HasPrefix(e.Kind, "ipv6-prefix-") {
			got = append(got, e)
		}
	}
	if len(got) != len(kinds) {
		t.Fatalf("/80 events %+v; want kinds %v", got, kinds)
	}
	for i, e := range got {
		if e.Kind != kinds[i] {
			t.Fatalf("/80 events %+v; want kinds %v", got, kinds)
		}
		for _, want := range names[i] {
			if !strings.Contains(e.Message, want) {
				t.Errorf("%s event %q does not name %s", e.Kind, e.Message, want)
			}
		}
	}
}

func TestIPv6RefusedWhereTheSubnetHasNoIPv6(t *testing.T) {
	n := newNode(t, "t3.small", v6OnlyEnv())
	if err := n.sim.DisassociateSubnetIPv6(n.sim.State().SubnetID); err != nil {
		t.Fatal(err)
	}
	_, err := n.r.Run(ctxFor(t), Options{})
	if !errors.Is(err, cloud.ErrSubnetNoIPv6) || !strings.Contains(err.Error(), "need an IPv6 CIDR on subnet "+n.sim.State().SubnetID) {
		t.Fatalf("err = %v", err)
	}
	if p := n.ipv6Pool(); p.Prefix.IsValid() {
		t.Fatalf("store has %+v", p)
	}
}

func TestIPv6RefusedOnAnInstanceWithoutPrefixes(t *testing.T) {
	n := newNode(t, "t2.medium", v6OnlyEnv())
	_, err := n.r.Run(ctxFor(t), Options{})
	if !IsConfigError(err) || !strings.Contains(err.Error(), "ENABLE_IPv6=true: t2.medium") {
		t.Fatalf("err = %v", err)
	}
	if c := n.sim.Counters(); c["AssignIpv6Addresses"] != 0 {
		t.Fatalf("counters %v", c)
	}
}

// Dual stack: the IPv4 pool grows to its warm targets as today, and the
// /80 is assigned beside it; a pod gets both addresses in one take.
func TestDualStackPassAndTake(t *testing.T) {
	n := newNode(t, "t3.small", env{settings.EnableIPv6: "true", "WARM_IP_TARGET": "2"})
	n.converge(4)
	snap := n.snapshot()
	free := 0
	for _, e := range snap.ENIs {
		for _, b := range e.Blocks {
			free += len(b.Addrs)
		}
	}
	if free < 2 || !n.ipv6Pool().Prefix.IsValid() || n.sim.Counters()["AssignIpv6Addresses"] != 1 {
		t.Fatalf("free IPv4 %d, /80 %+v, counters %v", free, n.ipv6Pool(), n.sim.Counters())
	}
	a, err := n.take6("c1/eth0")
	if err != nil || !a.IP.Is4() || !n.ipv6Pool().Prefix.Contains(a.IPv6) || a.EgressIP.IsValid() {
		t.Fatalf("dual-stack pod %+v: %v", a, err)
	}
	n.converge(4) // WARM_IP_TARGET refills the IPv4 the pod took
	checkAgrees(t, n.sim, n.st)
	n.sim.ResetCounters()
	n.clock.Advance(time.Minute)
	if rep := n.pass(); ec2Calls(n.sim.Counters()) != 0 || rep.Observed != FromIMDS {
		t.Fatalf("dual stack at rest: %v %q", n.sim.Counters(), rep.Observed)
	}
}

// A dry run says it would assign the /80 and makes no IPv6 call; the
// report's JSON carries what the pass did about the /80.
func TestIPv6DryRunAndReportJSON(t *testing.T) {
	n := newNode(t, "t3.small", v6OnlyEnv())
	rep, err := n.r.Run(ctxFor(t), Options{DryRun: true})
	if err != nil || !slices.Contains(rep.Calls, "AssignIpv6Addresses") || n.sim.Counters()["AssignIpv6Addresses"] != 0 {
		t.Fatalf("dry run: calls %v, counters %v: %v", rep.Calls, n.sim.Counters(), err)
	}
	rep = n.pass()
	raw, err := rep.MarshalJSON()
	if err != nil || !strings.Contains(string(raw), `"ipv6":{"prefix":"`+n.ipv6Pool().Prefix.String()+`","action":"assigned"`) {
		t.Fatalf("json %s: %v", raw, err)
	}
}

// The /80 is gone and EC2 refuses a new one: the store forgets the old
// /80, so ADDs fail (and wait for the next pass) instead of handing out
// /128s EC2 no longer routes; the next pass repairs it.
func TestIPv6GoneAndNotReplacedHandsOutNothing(t *testing.T) {
	n := newNode(t, "t3.small", v6OnlyEnv())
	n.pass()
	old := n.ipv6Pool().Prefix
	if _, err := n.take6("c1/eth0"); err != nil {
		t.Fatal(err)
	}
	id, _ := n.primary()
	if err := sdk(t).UnassignIPv6(ctxFor(t), id, nil, []netip.Prefix{old}); err != nil {
		t.Fatal(err)
	}
	n.sim.FailNext("AssignIpv6Addresses", "UnauthorizedOperation", 1)
	n.clock.Advance(time.Minute)
	if _, err := n.r.Run(ctxFor(t), Options{}); err == nil || !strings.Contains(err.Error(), "assigning a /80") {
		t.Fatalf("err = %v", err)
	}
	if p := n.ipv6Pool(); p.Prefix.IsValid() || !slices.Contains(p.Ours, old) {
		t.Fatalf("store keeps %+v", p)
	}
	if a, err := n.take6("c2/eth0"); !errors.Is(err, store.ErrNoFreeAddress) {
		t.Fatalf("took %+v: %v", a, err)
	}
	n.clock.Advance(time.Minute)
	if rep := n.pass(); rep.IPv6.Action != IPv6Repaired && rep.IPv6.Action != IPv6Assigned {
		t.Fatalf("%+v", rep.IPv6)
	}
	a, err := n.take6("c2/eth0")
	if err != nil || a.IPv6 == old.Addr().Next() {
		t.Fatalf("took %+v (c1 holds %s): %v", a, old.Addr().Next(), err)
	}
}
