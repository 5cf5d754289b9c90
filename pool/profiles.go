package pool

// Network profiles. Each profile has its own pool: ENIs created
// in its subnets with its security groups, tagged with its name, serving only
// its pods. Compute and the pick run once per pool, with Config.Profile
// naming it; the pool sees only its own ENIs (ENI.Profile == Config.Profile).
// Another pool's ENIs are foreign: each still takes its device index and one
// of the node's ENI slots (so growth room, max ENIs and the device a new ENI
// gets account for every pool), and the addresses its pods hold count
// against max pods, but nothing of it is counted free, grown, released,
// deleted or picked. An ENI whose groups were changed behind vpc-cni's back
// (ENI.GroupsDrift) keeps the addresses its pods hold, gets no new pod, is
// not grown, and its free blocks go back as excess.

// ForPool is the snapshot as pool p sees it: that pool's own timers in
// place of the top-level ones. The ENIs are left as they are: the policy
// tells its own from the foreign ones.
func ForPool(s Snapshot, p Pool) Snapshot {
	t := TimersOf(s, p)
	s.ExcessSince, s.GrowBlockedUntil, s.GrowBlockedWhy = t.ExcessSince, t.GrowBlockedUntil, t.GrowBlockedWhy
	return s
}

// TimersOf returns pool p's timers as the snapshot holds them: the default
// pool's are the top-level fields (as the state file keeps them), a
// profile's in Profiles.
func TimersOf(s Snapshot, p Pool) Timers {
	if p != DefaultPool {
		return s.Profiles[p]
	}
	return Timers{ExcessSince: s.ExcessSince, GrowBlockedUntil: s.GrowBlockedUntil, GrowBlockedWhy: s.GrowBlockedWhy}
}

// SetTimers sets pool p's timers in the snapshot, where TimersOf finds
// them (a profile's zero timers are dropped, as the store drops them).
func (s *Snapshot) SetTimers(p Pool, t Timers) {
	switch {
	case p == DefaultPool:
		s.ExcessSince, s.GrowBlockedUntil, s.GrowBlockedWhy = t.ExcessSince, t.GrowBlockedUntil, t.GrowBlockedWhy
	case t == (Timers{}):
		delete(s.Profiles, p)
	default:
		if s.Profiles == nil {
			s.Profiles = map[Pool]Timers{}
		}
		s.Profiles[p] = t
	}
}

// ServesPool reports whether the ENI belongs to the pool of profile.
func (e ENI) ServesPool(p Pool) bool { return e.Profile == p }

// Placeholder is the ENI a planned CreateENI will make: a pool planned after
// the one that made the action sees its device index and slot taken.
func Placeholder(a Action) ENI {
	return ENI{ID: "planned-" + string(a.Profile), DeviceIndex: a.DeviceIndex, Profile: a.Profile, Class: Ours}
}

// PoolENIs counts the card 0 ENIs of profile's pool and of the other pools
// (not-ours ENIs are neither: Figures.NotOurs counts them).
func PoolENIs(s Snapshot, p Pool) (own, others int) {
	for _, e := range s.ENIs {
		switch {
		case e.Card != 0 || e.NotOurs() && !e.ServesPool(p):
		case e.ServesPool(p):
			own++
		default:
			others++
		}
	}
	return own, others
}

// ComputePools plans every pool of the node in one pass: pools[i] is a
// pool's configuration (Config.Profile names it; "" is the default pool) and
// waiting[profile] the pods waiting for its addresses. Pools with waiting
// pods go first, then the default pool, then the profiles in the order given,
// so a waiting pod is served before another pool's warm target takes the
// last ENI slot. Each pool sees the ENIs the pools planned before it will
// create (Placeholder), so no two ask for one device index or one slot. The
// plans come back in pools' order. Pure, as Compute.
func ComputePools(in Input, pools []Config, waiting map[Pool]int) []Plan {
	order := make([]int, 0, len(pools))
	for _, first := range []bool{true, false} {
		for i, c := range pools {
			if (waiting[c.Profile] > 0) == first {
				order = append(order, i)
			}
		}
	}
	plans := make([]Plan, len(pools))
	snap := in.Snapshot
	snap.ENIs = append([]ENI(nil), in.Snapshot.ENIs...)
	for _, i := range order {
		pin := in
		pin.Config, pin.Waiting = pools[i], waiting[pools[i].Profile]
		pin.Snapshot = ForPool(snap, pools[i].Profile)
		plans[i] = Compute(pin)
		for _, a := range plans[i].Actions {
			if a.Kind == CreateENI {
				snap.ENIs = append(snap.ENIs, Placeholder(a))
			}
		}
	}
	return plans
}
