package pool

import (
	"fmt"
	"strings"
	"time"
)

// rule is the target rule in force; see the package documentation.
type rule int

const (
	ipTargetRule     rule = iota // WARM_IP_TARGET and/or MINIMUM_IP_TARGET
	prefixTargetRule             // prefix delegation, WARM_PREFIX_TARGET
	eniTargetRule                // secondary IPs, WARM_ENI_TARGET
)

// policy holds what Compute derives from its input once.
type policy struct {
	in      Input
	rule    rule
	pd      bool
	warmIP  int // the targets ipTargetRule keeps, in addresses
	minIP   int
	unit    int // addresses per unit of growth: 1, or 16 for a prefix
	maxENIs int
	perENI  int // slots per ENI
	maxPods int
	name    string // Figures.Policy
	ahead   int    // adaptive growth: pods expected before the next pass (adaptive.go)
	// singles is the rule growth follows in prefix mode while the subnet
	// has no free /28 (Now < Snapshot.NoPrefixesUntil); nil otherwise.
	singles *policy
}

func newPolicy(in Input) *policy {
	c := in.Config
	p := &policy{in: in, pd: c.PrefixDelegation, warmIP: c.WarmIPTarget, minIP: c.MinIPTarget, unit: 1}
	p.maxENIs, p.perENI = EffectiveMaxENIs(in.Limits, c), SlotsPerENI(in.Limits)
	p.maxPods = PodCapacity(in.Limits, c, NotOursSlots(in.Snapshot)).MaxPods
	p.ahead = RecentArrivals(in.Snapshot, c.Profile, in.Now, c.AdaptiveWindow)
	if p.pd {
		p.unit = PrefixSize
	}
	switch {
	case c.Retired:
		// A profile no longer configured: nothing is wanted, everything
		// free goes back, what pods hold stays until they are deleted.
		p.rule, p.warmIP, p.minIP = ipTargetRule, 0, 0
		p.name = fmt.Sprintf("profile %s is retired here (no longer configured, or not in PROFILES)", c.Profile)
	case c.WarmIPTarget > 0 || c.MinIPTarget > 0:
		p.rule = ipTargetRule
		var parts []string
		if c.WarmIPTarget > 0 {
			parts = append(parts, fmt.Sprintf("WARM_IP_TARGET=%d", c.WarmIPTarget))
		}
		if c.MinIPTarget > 0 {
			parts = append(parts, fmt.Sprintf("MINIMUM_IP_TARGET=%d", c.MinIPTarget))
		}
		p.name = strings.Join(parts, " ")
	case p.pd:
		p.rule = prefixTargetRule
		p.name = fmt.Sprintf("WARM_PREFIX_TARGET=%d", c.WarmPrefixTarget)
	default:
		p.rule = eniTargetRule
		p.name = fmt.Sprintf("WARM_ENI_TARGET=%d", c.WarmENITarget)
	}
	if c.Profile != "" && !c.Retired {
		p.name = "profile " + string(c.Profile) + ": " + p.name
	}
	if p.pd && in.Now.Before(in.Snapshot.NoPrefixesUntil) {
		p.singles = p.singlesPolicy()
	}
	return p
}

// singlesPolicy grows single /32s, one per slot, instead of prefixes: the IP
// targets unchanged (prefix mode only rounds them up to whole prefixes), and
// WARM_PREFIX_TARGET as WARM_IP_TARGET = its prefixes' addresses, at least 1.
func (p *policy) singlesPolicy() *policy {
	s := *p
	s.unit, s.singles = 1, nil
	if p.rule == prefixTargetRule {
		s.rule = ipTargetRule
		s.warmIP, s.minIP = max(p.in.Config.WarmPrefixTarget*PrefixSize, 1), 0
	}
	s.name = fmt.Sprintf("%s (single IPs: no free /28 until %s)",
		p.name, p.in.Snapshot.NoPrefixesUntil.Format(time.TimeOnly))
	return &s
}

// grower is the policy growth follows: singles during the fallback.
func (p *policy) grower() *policy {
	if p.singles != nil {
		return p.singles
	}
	return p
}

// grows reports whether growth would follow: under the rule, or during the
// fallback under the single-IP rule too, so a release kept now is not undone
// by a grow either before or after the fallback ends.
func (p *policy) grows(t *tally) bool {
	return p.need(t).units > 0 || p.singles != nil && p.singles.need(t).units > 0
}

// FreeTarget is roughly how many free addresses the rule in force keeps at
// rest (whole ENIs and prefixes can leave more). Below it a reconcile has
// work; the plugin checks this after each ADD without reading the pool.
func FreeTarget(l Limits, c Config) int {
	switch {
	case c.IPv4Off:
		return 0 // IPv6 only: no IPv4 pod addresses to keep free
	case c.WarmIPTarget > 0 || c.MinIPTarget > 0:
		return c.WarmIPTarget
	case c.PrefixDelegation:
		return max(c.WarmPrefixTarget*PrefixSize, 1)
	}
	return max(c.WarmENITarget*SlotsPerENI(l), 1)
}

// demand is what the rule asks of the pool as it stands.
type demand struct {
	short    int // addresses the rule asks for, before any limit (Figures.Shortfall)
	units    int // what to grow, in units, within the ENI, slot and max-pods limits
	eniLimit int // how many ENIs, lowest device index first, may take the growth
}

// need applies the rule to t. Releases are tried against it too: a release
// is kept only if need still asks for nothing afterwards (no grow/free loop).
func (p *policy) need(t *tally) demand {
	d := demand{eniLimit: p.maxENIs}
	var units int
	switch p.rule {
	case ipTargetRule:
		w, m := p.warmIP, p.minIP
		d.short = max(w+p.in.Waiting-t.free, m-t.held(), 0)
		if d.short > 0 {
			d.short = max(d.short, w+p.in.Waiting+p.ahead-t.free)
		}
		units = ceilDiv(d.short, p.unit)
	case prefixTargetRule:
		units = max(p.in.Config.WarmPrefixTarget-t.freePrefixes, 0)
		// Always keep one address free, and one for each waiting pod.
		if want := max(p.in.Waiting, 1) - t.free; want > units*PrefixSize {
			units = ceilDiv(want, PrefixSize)
		}
		if want := max(p.in.Waiting, 1) + p.ahead - t.free; units > 0 && want > units*PrefixSize {
			units = ceilDiv(want, PrefixSize)
		}
		d.short = units * PrefixSize
	case eniTargetRule:
		d.eniLimit = p.neededENIs(t)
		units = p.fillRoom(t, d.eniLimit)
		d.short = units
	}
	d.units = min(units, p.fillRoom(t, d.eniLimit), p.podRoom(t))
	return d
}

// why gives the figures behind a growth, for its actions' Reason.
func (p *policy) why(t *tally, d demand) string {
	switch p.rule {
	case ipTargetRule:
		return fmt.Sprintf("%s: %d free, %d held, need %d more", p.name, t.free, t.held(), d.short)
	case prefixTargetRule:
		return fmt.Sprintf("%s: %d whole free prefixes, %d free, need %d more prefixes",
			p.name, t.freePrefixes, t.free, d.short/PrefixSize)
	}
	return fmt.Sprintf("%s: %d in use or cooling, keep %s full, need %d more",
		p.name, t.assigned+t.cooling, plural(d.eniLimit, "ENI", "ENIs"), d.short)
}

// neededENIs is how many full ENIs WARM_ENI_TARGET asks for: the pods' and
// cooling addresses plus WARM_ENI_TARGET ENIs' worth free, and at least one
// free address, so WARM_ENI_TARGET=0 grows by whole ENIs only when needed.
//
// An ENI that may not grow (its subnet is full, or the primary under custom
// networking) holds only what it has, so more ENIs are needed to hold want.
func (p *policy) neededENIs(t *tally) int {
	want := t.assigned + t.cooling + p.in.Waiting + max(p.in.Config.WarmENITarget*p.perENI, 1)
	n, capacity := 0, 0
	for i := range t.enis {
		e := &t.enis[i]
		if e.gone || capacity >= want {
			continue
		}
		n++
		capacity += p.capacity(e)
	}
	n += ceilDiv(want-capacity, p.perENI)
	return min(max(n, 1), p.maxENIs)
}

// capacity is how many addresses an ENI can hold for pods.
func (p *policy) capacity(e *eniTally) int {
	switch {
	case e.excluded:
		return e.busy
	case e.noGrow:
		return e.slots
	}
	return p.perENI
}

// fillRoom is the free slots on the first limit live ENIs, counting the ENIs
// that may still be created up to limit.
func (p *policy) fillRoom(t *tally, limit int) int {
	room, seen := 0, 0
	for i := range t.enis {
		e := &t.enis[i]
		if e.gone {
			continue
		}
		if seen >= limit {
			break
		}
		seen++
		if !e.noGrow {
			room += max(p.perENI-e.slots, 0)
		}
	}
	return room + max(limit-seen, 0)*p.perENI
}

// podRoom is the growth max pods allows, in units. A prefix that crosses max
// pods is still allowed, so pods up to max pods always fit.
func (p *policy) podRoom(t *tally) int {
	return ceilDiv(p.maxPods-t.held()-t.foreignBusy, p.unit)
}

func (p *policy) prefixes() bool { return p.unit == PrefixSize }

func (p *policy) unitName() string {
	if p.prefixes() {
		return "prefixes"
	}
	return "addresses"
}
