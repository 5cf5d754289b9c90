package pool

import (
	"fmt"
	"time"
)

// Compute returns the plan of EC2 actions that brings the pool to its
// targets, the figures behind it and the ExcessSince to persist. It is pure
// and deterministic: the same input always gives the same plan.
func Compute(in Input) Plan {
	p := newPolicy(in)
	t := newTally(in.Snapshot, in.Now, in.Config, p.perENI)
	g := p.grower()
	d := g.need(&t)
	plan := Plan{Figures: p.figures(&t, d)}
	if in.Config.IPv4Off {
		// IPv6 only: the warm targets do not apply and no pod takes an
		// IPv4, so the IPv4 pool neither grows nor releases.
		plan.Figures.Shortfall = 0
		return plan
	}
	if d.units > 0 {
		// Growing: nothing is excess. During a subnet back-off the figures
		// still show the shortfall, but nothing is asked of EC2.
		if !in.Now.Before(in.Snapshot.GrowBlockedUntil) {
			plan.Actions = g.growActions(&t, d)
			p.tagActions(&plan)
		}
		return plan
	}
	r := p.pickReleases(&t)
	plan.Figures.Excess = r.addrs
	since := in.Snapshot.ExcessSince
	switch {
	case r.empty():
	case since.IsZero():
		plan.ExcessSince = in.Now
	case in.Now.Sub(since) < in.Config.ReleaseDelay:
		plan.ExcessSince = since
	default:
		// Released: new excess must last a full delay again.
		why := fmt.Sprintf("%s: %d free, %d held, %d excess for %s",
			p.name, plan.Figures.Free, plan.Figures.Total, r.addrs, in.Now.Sub(since).Round(time.Second))
		plan.Actions = p.releaseActions(&t, r, why)
		p.tagActions(&plan)
	}
	return plan
}

func (p *policy) figures(t *tally, d demand) Figures {
	own, others := len(p.in.Snapshot.ENIs), 0
	if p.foreignAny() {
		own, others = PoolENIs(p.in.Snapshot, p.in.Config.Profile)
	}
	mode := ModeSecondaryIP
	if p.pd {
		mode = ModePrefix
	}
	return Figures{
		Mode:      mode,
		Free:      t.free,
		Cooling:   t.cooling,
		Assigned:  t.assigned,
		Releasing: t.releasing,
		Total:     t.held(),
		Shortfall: d.short,
		Waiting:   p.in.Waiting,
		ENIs:      own,
		Others:    others,
		Profile:   p.in.Config.Profile,
		MaxENIs:   p.maxENIs,
		MaxPods:   p.maxPods,
		NotOurs:   NotOursSlots(p.in.Snapshot),
		Policy:    p.grower().name,
	}
}

// foreignAny reports whether another pool than this one has an ENI.
func (p *policy) foreignAny() bool {
	for _, e := range p.in.Snapshot.ENIs {
		if !e.ServesPool(p.in.Config.Profile) {
			return true
		}
	}
	return false
}

// tagActions names the pool on each of the plan's actions.
func (p *policy) tagActions(plan *Plan) {
	for i := range plan.Actions {
		plan.Actions[i].Profile = p.in.Config.Profile
	}
}
