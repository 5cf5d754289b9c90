package pool

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// poolSim is the sim with several pools planned together, as a pass does.
type poolSim struct {
	*sim
	pools   []Config
	waiting map[Pool]int
}

func newPoolSim(t tb, l Limits, pools ...Config) *poolSim {
	s := newSim(t, l, pools[0])
	s.in.Snapshot.Profiles = map[Pool]Timers{}
	return &poolSim{sim: s, pools: pools, waiting: map[Pool]int{}}
}

func profileCfg(name Pool, c Config) Config {
	c.Profile = name
	return c
}

// planAll plans every pool and persists each one's ExcessSince.
func (m *poolSim) planAll() []Plan {
	plans := ComputePools(m.in, m.pools, m.waiting)
	for i, p := range plans {
		if name := m.pools[i].Profile; name != "" {
			t := m.in.Snapshot.Profiles[name]
			t.ExcessSince = p.ExcessSince
			m.in.Snapshot.Profiles[name] = t
			continue
		}
		m.in.Snapshot.ExcessSince = p.ExcessSince
	}
	return plans
}

func (m *poolSim) steadyAll() {
	m.t.Helper()
	for range 100 {
		acted := false
		for _, p := range m.planAll() {
			m.apply(p)
			acted = acted || !p.Empty()
		}
		if !acted {
			return
		}
	}
	m.t.Fatalf("no steady state after 100 rounds")
}

func (m *poolSim) config(profile Pool) Config {
	for _, c := range m.pools {
		if c.Profile == profile {
			return c
		}
	}
	m.t.Fatalf("no pool %q", profile)
	return Config{}
}

// addPodTo gives a pod of profile an address; false when its pool has none.
func (m *poolSim) addPodTo(profile Pool) (ENI, bool) {
	e, b, a, ok := PickPodAddress(m.in.Snapshot, m.in.Now, m.config(profile))
	if !ok {
		return ENI{}, false
	}
	ad := &m.in.Snapshot.ENIs[e].Blocks[b].Addrs[a]
	m.podCount++
	ad.State, ad.Since, ad.Owner = Assigned, m.in.Now, fmt.Sprintf("%s-pod-%d/eth0", profile, m.podCount)
	return m.in.Snapshot.ENIs[e], true
}

func (m *poolSim) enisOf(profile Pool) []ENI {
	var out []ENI
	for _, e := range m.in.Snapshot.ENIs {
		if e.Profile == profile {
			out = append(out, e)
		}
	}
	return out
}

var (
	warmENI1 = Config{WarmENITarget: 1, Cooldown: 30 * time.Second, ReleaseDelay: time.Minute}
	warmIP2  = Config{WarmIPTarget: 2, Cooldown: 30 * time.Second, ReleaseDelay: time.Minute}
)

func TestEveryProfileGetsItsOwnENIAndPodsStayInTheirPool(t *testing.T) {
	m := newPoolSim(t, t2medium, warmIP2, profileCfg("gold", warmIP2), profileCfg("blue", warmIP2))
	m.steadyAll()
	for _, name := range []Pool{"gold", "blue"} {
		if n := len(m.enisOf(name)); n != 1 {
			t.Fatalf("profile %s has %d ENIs, want 1", name, n)
		}
	}
	devices := map[int]bool{}
	for _, e := range m.in.Snapshot.ENIs {
		if devices[e.DeviceIndex] {
			t.Fatalf("two ENIs at device %d", e.DeviceIndex)
		}
		devices[e.DeviceIndex] = true
	}
	for range 4 {
		for _, name := range []Pool{"", "gold", "blue"} {
			e, ok := m.addPodTo(name)
			if !ok {
				t.Fatalf("no address for a pod of %q", name)
			}
			if e.Profile != name {
				t.Fatalf("a pod of %q got an address on %s of profile %q", name, e.ID, e.Profile)
			}
			m.steadyAll()
		}
	}
}

func TestADefaultPoolDoesNotCountAProfilesFreeAddresses(t *testing.T) {
	m := newPoolSim(t, t2medium, warmIP2, profileCfg("gold", warmIP2))
	m.steadyAll()
	// The default pool holds its 2 free on the primary; a pod takes one.
	if _, ok := m.addPodTo(""); !ok {
		t.Fatal("no default address")
	}
	plans := m.planAll()
	if !grows(plans[0]) {
		t.Fatalf("the default pool has 1 free of 2 wanted and gold's free addresses beside it; it must grow: %+v", plans[0])
	}
	for _, a := range plans[0].Actions {
		if a.ENIID != "" && m.eniByID(a.ENIID).Profile != "" {
			t.Fatalf("the default pool acts on a profile's ENI: %+v", a)
		}
	}
}

func (m *poolSim) eniByID(id string) ENI {
	for _, e := range m.in.Snapshot.ENIs {
		if e.ID == id {
			return e
		}
	}
	m.t.Fatalf("no ENI %s", id)
	return ENI{}
}

func TestAProfileCannotGrowPastTheNodesENISlots(t *testing.T) {
	// t2.medium: 3 ENIs. The default pool's 2 warm ENIs and gold take all three.
	warmENI2 := warmENI1
	warmENI2.WarmENITarget = 2
	m := newPoolSim(t, t2medium, warmENI2, profileCfg("gold", warmENI1), profileCfg("blue", warmENI1))
	m.steadyAll()
	if got := len(m.in.Snapshot.ENIs); got != 3 {
		t.Fatalf("%d ENIs, want the instance's 3", got)
	}
	starved := Pool("")
	for _, name := range []Pool{"gold", "blue"} {
		if len(m.enisOf(name)) == 0 {
			starved = name
		}
	}
	if starved == "" {
		t.Fatalf("both profiles got an ENI on a 3-ENI node with a default pool: %+v", m.in.Snapshot.ENIs)
	}
	in := m.in
	in.Config = m.config(starved)
	full := Explain(in, "")
	if !full.Full || full.Limit != LimitENIs {
		t.Fatalf("a pod of %s on a node with every ENI slot taken: %+v, want full at %s", starved, full, LimitENIs)
	}
}

func TestAWaitingProfilePodIsServedBeforeAnotherPoolsWarmTarget(t *testing.T) {
	// Default pool: primary plus a warm ENI would take 2 of 3 slots; gold
	// waits for a pod, so it is planned first and gets one.
	m := newPoolSim(t, t2medium, profileCfg("", Config{WarmENITarget: 2, Cooldown: 30 * time.Second, ReleaseDelay: time.Minute}),
		profileCfg("gold", warmIP2))
	m.waiting["gold"] = 1
	plans := m.planAll()
	var goldCreates, defaultCreates []Action
	for i, p := range plans {
		for _, a := range p.Actions {
			if a.Kind != CreateENI {
				continue
			}
			if m.pools[i].Profile == "gold" {
				goldCreates = append(goldCreates, a)
			} else {
				defaultCreates = append(defaultCreates, a)
			}
		}
	}
	if len(goldCreates) != 1 || goldCreates[0].Profile != "gold" {
		t.Fatalf("gold's waiting pod: creates %+v, want one ENI for gold", goldCreates)
	}
	for _, a := range defaultCreates {
		if a.DeviceIndex == goldCreates[0].DeviceIndex {
			t.Fatalf("two pools plan device %d", a.DeviceIndex)
		}
	}
	if len(defaultCreates)+len(goldCreates)+1 > t2medium.MaxENIs {
		t.Fatalf("the plans ask for more ENIs than the instance has: %+v %+v", defaultCreates, goldCreates)
	}
}

func TestAProfileReleasesOnlyItsOwnExcess(t *testing.T) {
	m := newPoolSim(t, p3dn24xl, warmIP2, profileCfg("gold", warmIP2))
	m.steadyAll()
	gold := m.enisOf("gold")[0]
	// Pods come and go on gold: 6 more addresses than the target.
	for range 6 {
		m.addPodTo("gold")
		m.steadyAll()
	}
	for k := range 6 {
		m.delPodOf("gold", k)
	}
	m.advance(2 * time.Minute)
	m.planAll() // excess first seen
	m.advance(2 * time.Minute)
	plans := m.planAll()
	released := false
	for i, p := range plans {
		for _, a := range p.Actions {
			if a.Kind == Unassign || a.Kind == DeleteENI {
				if a.ENIID != gold.ID || m.pools[i].Profile != "gold" {
					t.Fatalf("pool %q released %+v; only gold's ENI %s has excess", m.pools[i].Profile, a, gold.ID)
				}
				released = true
			}
		}
	}
	if !released {
		t.Fatalf("gold's excess is not released: %+v", plans)
	}
}

func (m *poolSim) delPodOf(profile Pool, _ int) {
	for _, ad := range m.addrs() {
		if ad.State == Assigned && len(ad.Owner) > len(profile) && ad.Owner[:len(profile)+1] == string(profile)+"-" {
			ad.State, ad.Since, ad.Owner = Cooling, m.in.Now, ""
			return
		}
	}
}

func TestADriftedENIGetsNoNewPodAndItsPoolGrowsElsewhere(t *testing.T) {
	m := newPoolSim(t, t2medium, warmIP2, profileCfg("gold", warmIP2))
	m.steadyAll()
	gold := m.enisOf("gold")[0]
	e, ok := m.addPodTo("gold")
	if !ok || e.ID != gold.ID {
		t.Fatalf("first gold pod: %v %s", ok, e.ID)
	}
	for i := range m.in.Snapshot.ENIs {
		if m.in.Snapshot.ENIs[i].ID == gold.ID {
			m.in.Snapshot.ENIs[i].GroupsDrift = "groups [sg-other], the profile's are [sg-gold]"
		}
	}
	if e, ok := m.addPodTo("gold"); ok {
		t.Fatalf("a pod got %s on the drifted ENI %s", e.ID, gold.ID)
	}
	m.steadyAll()
	goldENIs := m.enisOf("gold")
	if len(goldENIs) != 2 {
		t.Fatalf("gold has %d ENIs after its only one drifted, want a second", len(goldENIs))
	}
	e, ok = m.addPodTo("gold")
	if !ok || e.ID == gold.ID {
		t.Fatalf("the next gold pod: ok %v on %s, want the new ENI", ok, e.ID)
	}
}

func TestARetiredProfileGivesBackItsFreeENI(t *testing.T) {
	m := newPoolSim(t, t2medium, warmIP2, profileCfg("gold", warmIP2))
	m.steadyAll()
	gold := m.enisOf("gold")[0]
	m.pools[1].Retired = true
	m.planAll()
	m.advance(2 * time.Minute)
	plans := m.planAll()
	if len(plans[1].Actions) != 1 || plans[1].Actions[0].Kind != DeleteENI || plans[1].Actions[0].ENIID != gold.ID {
		t.Fatalf("retired gold: %+v, want its ENI %s deleted", plans[1].Actions, gold.ID)
	}
}

func TestOtherPoolsPodsCountAgainstMaxPods(t *testing.T) {
	c := warmIP2
	c.MaxPods = 6
	m := newPoolSim(t, p3dn24xl, c, profileCfg("gold", c))
	m.steadyAll()
	for range 4 {
		if _, ok := m.addPodTo("gold"); !ok {
			t.Fatal("no gold address")
		}
		m.steadyAll()
	}
	if held := m.heldBy(""); held > 2 {
		t.Fatalf("default pool holds %d with gold's 4 pods and max pods 6", held)
	}
}

func (m *poolSim) heldBy(profile Pool) int {
	n := 0
	for _, e := range m.enisOf(profile) {
		for _, b := range e.Blocks {
			n += len(b.Addrs)
		}
	}
	return n
}

// Whatever pods come and go in whichever pool, no plan acts on another
// pool's ENI, no two ENIs share a device, the instance's ENI limit holds,
// and a pod always gets an address of its own pool.
func TestPoolsStayApartProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		names := []Pool{"", "gold", "blue"}
		var pools []Config
		for _, n := range names {
			c := Config{Cooldown: 30 * time.Second, ReleaseDelay: time.Minute}
			switch rapid.IntRange(0, 2).Draw(rt, "rule "+string(n)) {
			case 0:
				c.WarmENITarget = rapid.IntRange(0, 1).Draw(rt, "warm eni "+string(n))
			case 1:
				c.WarmIPTarget = rapid.IntRange(1, 4).Draw(rt, "warm ip "+string(n))
			default:
				c.MinIPTarget = rapid.IntRange(1, 6).Draw(rt, "min ip "+string(n))
			}
			pools = append(pools, profileCfg(n, c))
		}
		m := newPoolSim(rt, p3dn24xl, pools...)
		m.in.Limits = Limits{MaxENIs: 5, IPv4PerENI: 6}
		for step := range 40 {
			name := names[rapid.IntRange(0, 2).Draw(rt, fmt.Sprintf("pool %d", step))]
			switch rapid.IntRange(0, 2).Draw(rt, fmt.Sprintf("op %d", step)) {
			case 0:
				if e, ok := m.addPodTo(name); ok && e.Profile != name {
					rt.Fatalf("pod of %q on %s of %q", name, e.ID, e.Profile)
				}
			case 1:
				m.delPodOf(name, 0)
			default:
				m.advance(time.Minute)
			}
			plans := m.planAll()
			for i, p := range plans {
				for _, a := range p.Actions {
					if a.ENIID != "" && m.eniByID(a.ENIID).Profile != m.pools[i].Profile {
						rt.Fatalf("pool %q acts on %s of %q", m.pools[i].Profile, a.ENIID, m.eniByID(a.ENIID).Profile)
					}
					if a.Profile != m.pools[i].Profile {
						rt.Fatalf("pool %q's action names %q", m.pools[i].Profile, a.Profile)
					}
				}
				m.apply(p) // sim.applyOne fails on a taken device or the ENI limit
			}
			devs := []int{}
			for _, e := range m.in.Snapshot.ENIs {
				devs = append(devs, e.DeviceIndex)
			}
			slices.Sort(devs)
			if len(slices.Compact(devs)) != len(m.in.Snapshot.ENIs) {
				rt.Fatalf("two ENIs share a device: %v", devs)
			}
		}
	})
}
