package pool

import "time"

type planKind struct{ grew, released bool }

func classify(p Plan) planKind {
	var k planKind
	for _, a := range p.Actions {
		switch a.Kind {
		case CreateENI, Assign:
			k.grew = true
		case Unassign, DeleteENI:
			k.released = true
		}
	}
	return k
}

// planAndApply computes one plan, checks it, applies it and checks the result.
func (w *watch) planAndApply() planKind {
	s, in := w.s, w.s.in
	before := s.count()
	p := s.plan()
	k := classify(p)
	w.checkFigures(p, before)
	w.checkActions(p, k)
	w.checkDelay(p, k)
	s.apply(p)
	after := s.count()
	if k.grew {
		w.checkGrowthLimits(in, before, after)
	}
	if k.released {
		w.checkNoGrowAfterRelease()
	}
	return k
}

func (w *watch) checkFigures(p Plan, c counts) {
	f := p.Figures
	if f.Free != c.free || f.Cooling != c.cooling || f.Assigned != c.assigned || f.Total != c.held() {
		w.rt.Fatalf("figures %+v; the pool has %+v (cooling is never free)", f, c)
	}
}

func (w *watch) checkActions(p Plan, k planKind) {
	in := w.s.in
	if k.grew && k.released {
		w.rt.Fatalf("a plan both grows and releases: %+v", p.Actions)
	}
	if k.grew && in.Now.Before(in.Snapshot.GrowBlockedUntil) {
		w.rt.Fatalf("grew during the subnet back-off: %+v", p.Actions)
	}
	seen := map[int]bool{}
	for _, a := range p.Actions {
		if seen[a.DeviceIndex] {
			w.rt.Fatalf("two actions for device %d: %+v", a.DeviceIndex, p.Actions)
		}
		seen[a.DeviceIndex] = true
		grow := a.Kind == CreateENI || a.Kind == Assign
		if grow && (a.Count < 1 || a.Prefixes != growsPrefixes(in)) {
			w.rt.Fatalf("bad growth action %+v", a)
		}
	}
}

// checkDelay keeps its own record of when excess appeared: a release must
// come at least ReleaseDelay after it.
func (w *watch) checkDelay(p Plan, k planKind) {
	now := w.s.in.Now
	switch {
	case k.released:
		if w.excessSince.IsZero() || now.Sub(w.excessSince) < w.s.in.Config.ReleaseDelay {
			w.rt.Fatalf("released at %s; excess seen since %s, delay %s", now, w.excessSince, w.s.in.Config.ReleaseDelay)
		}
		w.excessSince = time.Time{}
	case p.Figures.Excess > 0:
		if w.excessSince.IsZero() {
			w.excessSince = now
		}
	default:
		w.excessSince = time.Time{}
	}
}

func (w *watch) checkGrowthLimits(in Input, before, after counts) {
	maxENIs, perENI, maxPods := PodLimits(in.Limits, in.Config)
	if n := len(w.s.in.Snapshot.ENIs); n > max(maxENIs, len(in.Snapshot.ENIs)) {
		w.rt.Fatalf("%d ENIs, limit %d", n, maxENIs)
	}
	if after.slots > max(maxENIs, len(in.Snapshot.ENIs))*perENI {
		w.rt.Fatalf("%d slots used, limit %d x %d", after.slots, maxENIs, perENI)
	}
	if before.held() >= maxPods {
		w.rt.Fatalf("grew with %d held, max pods %d", before.held(), maxPods)
	}
	overshoot := 0
	if growsPrefixes(in) {
		overshoot = PrefixSize - 1 // the last prefix may cross max pods
	}
	if after.held() > maxPods+overshoot {
		w.rt.Fatalf("%d held after growth, max pods %d", after.held(), maxPods)
	}
}

// checkNoGrowAfterRelease plans right after a release, back-off aside, with
// the prefix fallback as it is and, if it is in force, as if it had ended.
func (w *watch) checkNoGrowAfterRelease() {
	in := w.s.in
	in.Snapshot.GrowBlockedUntil = time.Time{}
	if p := Compute(in); classify(p).grew {
		w.rt.Fatalf("the plan right after a release grows: %+v", p.Actions)
	}
	in.Snapshot.NoPrefixesUntil = time.Time{}
	if p := Compute(in); classify(p).grew {
		w.rt.Fatalf("the plan right after a release grows once the prefix fallback ends: %+v", p.Actions)
	}
}

// growsPrefixes is the independent model of the unit of growth: prefixes in
// prefix mode, single addresses while the fallback is in force.
func growsPrefixes(in Input) bool {
	return in.Config.PrefixDelegation && !in.Now.Before(in.Snapshot.NoPrefixesUntil)
}
