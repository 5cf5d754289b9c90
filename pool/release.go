package pool

import (
	"fmt"
	"net/netip"
	"slices"
)

// releaseSet is what a pass would give back to EC2.
type releaseSet struct {
	blocks [][]int // by tally ENI index: the chosen block indexes, ascending
	whole  []int   // tally ENI indexes to delete, highest device first
	addrs  int     // addresses given back
	n      int     // ENIs with blocks chosen
}

func (r *releaseSet) empty() bool { return r.n == 0 && len(r.whole) == 0 }

// pickReleases chooses the excess to give back, highest device index ENI and
// highest block first. Each candidate is kept only if the rule still asks for
// no growth once it is gone, so a release is never followed by a grow. The
// WARM_ENI_TARGET rule gives back whole ENIs only.
func (p *policy) pickReleases(t *tally) releaseSet {
	r := releaseSet{blocks: make([][]int, len(t.enis))}
	for i := len(t.enis) - 1; i >= 0; i-- {
		e := &t.enis[i]
		if e.pos < 0 || e.notOurs {
			continue
		}
		if e.drifted && !e.keep && e.busy == 0 && !e.releasing {
			// Its groups are not its profile's and nothing on it is in
			// use: it can serve no pod, so it goes whole.
			e.gone = true
			r.whole = append(r.whole, i)
			r.addrs += addrsOf(p.in.Snapshot.ENIs[e.pos])
			continue
		}
		if e.excluded {
			p.tryExcluded(t, i, &r)
			continue
		}
		switch {
		case e.keep && p.rule == eniTargetRule:
			p.tryAllBlocks(t, i, &r)
			continue
		case e.keep:
		case p.rule == eniTargetRule || e.slots == 0:
			p.tryWholeENI(t, i, &r)
			continue
		}
		p.tryBlocks(t, i, &r)
	}
	return r
}

func addrsOf(e ENI) int {
	n := 0
	for _, b := range e.Blocks {
		n += len(b.Addrs)
	}
	return n
}

// tryExcluded gives back every wholly free block of the primary ENI under
// custom networking: it held them before the knob was turned on, and no pod
// may have them now, so no rule keeps them. They count as excess (and wait
// for the release delay like any excess); a block a pod still holds, or that
// is cooling, goes once it is free.
func (p *policy) tryExcluded(t *tally, i int, r *releaseSet) {
	e := &t.enis[i]
	blocks := p.in.Snapshot.ENIs[e.pos].Blocks
	var chosen []int
	for b := range blocks {
		blk := &blocks[b]
		if blk.Releasing || !countBlock(blk, p.in.Now, p.in.Config.Cooldown).releasable(blk) {
			continue
		}
		chosen = append(chosen, b)
		r.addrs += len(blk.Addrs)
		e.slots--
	}
	if len(chosen) > 0 {
		r.blocks[i] = chosen
		r.n++
	}
}

// tryWholeENI deletes an ENI (never the primary) that holds nothing a pod
// uses and has no Unassign in flight, if the rule allows it.
func (p *policy) tryWholeENI(t *tally, i int, r *releaseSet) {
	e := &t.enis[i]
	if e.primary || e.busy > 0 || e.releasing {
		return
	}
	e.gone = true
	t.free -= e.free
	t.freePrefixes -= e.freePrefixes
	if p.grows(t) {
		e.gone = false
		t.free += e.free
		t.freePrefixes += e.freePrefixes
		return
	}
	r.whole = append(r.whole, i)
	r.addrs += e.free
}

// tryAllBlocks is tryWholeENI for an ENI vpc-cni must keep (the primary,
// one it did not create): under WARM_ENI_TARGET its blocks go back all
// together, as addresses, if the rule still asks for no growth once they
// are gone; the ENI stays attached.
func (p *policy) tryAllBlocks(t *tally, i int, r *releaseSet) {
	e := &t.enis[i]
	blocks := p.in.Snapshot.ENIs[e.pos].Blocks
	if e.primary || e.busy > 0 || e.releasing || len(blocks) == 0 {
		return
	}
	fp, slots := e.freePrefixes, e.slots
	t.free -= e.free
	t.freePrefixes -= fp
	e.slots = 0
	if p.grows(t) {
		t.free += e.free
		t.freePrefixes += fp
		e.slots = slots
		return
	}
	chosen := make([]int, len(blocks))
	for b := range chosen {
		chosen[b] = b
	}
	r.blocks[i] = chosen
	r.addrs += e.free
	r.n++
	e.free, e.freePrefixes = 0, 0
}

// tryBlocks gives back the ENI's fully usable blocks, highest first, that the
// rule can spare. An ENI left with nothing becomes a deletion instead.
func (p *policy) tryBlocks(t *tally, i int, r *releaseSet) {
	e := &t.enis[i]
	blocks := p.in.Snapshot.ENIs[e.pos].Blocks
	now, cooldown := p.in.Now, p.in.Config.Cooldown
	var chosen []int
	for b := len(blocks) - 1; b >= 0 && p.spare(t) > 0; b-- {
		blk := &blocks[b]
		if blk.Releasing {
			continue
		}
		c := countBlock(blk, now, cooldown)
		if !c.releasable(blk) {
			continue
		}
		whole := c.wholeFreePrefix(blk)
		if p.tryTake(t, e, c.free, whole) {
			chosen = append(chosen, b)
			r.addrs += c.free
		}
	}
	switch {
	case len(chosen) == 0:
	case len(chosen) == len(blocks) && !e.keep:
		e.gone = true // slots and addresses already taken out of t
		r.whole = append(r.whole, i)
	default:
		slices.Reverse(chosen)
		r.blocks[i] = chosen
		r.n++
	}
}

// tryTake takes one block's addresses out of t and keeps them out if the rule
// still asks for no growth.
func (p *policy) tryTake(t *tally, e *eniTally, addrs int, wholePrefix bool) bool {
	if addrs > p.spare(t) {
		return false
	}
	fp := 0
	if wholePrefix {
		fp = 1
	}
	t.free -= addrs
	t.freePrefixes -= fp
	e.free -= addrs
	e.freePrefixes -= fp
	e.slots--
	if !p.grows(t) {
		return true
	}
	t.free += addrs
	t.freePrefixes += fp
	e.free += addrs
	e.freePrefixes += fp
	e.slots++
	return false
}

// spare is what the rule's excess allows to go, in addresses: for the IP
// targets max(min(free-W, held-MIN), 0); for WARM_PREFIX_TARGET the free
// addresses beyond its whole prefixes or the one address always kept free.
// Adaptive growth keeps its look-ahead too, so a batch grown for arrivals
// still coming is not handed back; at rest the look-ahead is 0.
// The WARM_ENI_TARGET rule is bounded by need alone.
func (p *policy) spare(t *tally) int {
	c := p.in.Config
	switch p.rule {
	case ipTargetRule:
		return max(min(t.free-p.warmIP-p.ahead, t.held()-p.minIP), 0)
	case prefixTargetRule:
		return max(t.free-max(c.WarmPrefixTarget*PrefixSize, 1)-p.ahead, 0)
	}
	return t.free
}

// releaseActions turns the set into one action per ENI, highest device first.
func (p *policy) releaseActions(t *tally, r releaseSet, why string) []Action {
	var acts []Action
	for i := len(t.enis) - 1; i >= 0; i-- {
		e := &t.enis[i]
		if slices.Contains(r.whole, i) {
			acts = append(acts, Action{
				Kind: DeleteENI, ENIID: e.id, DeviceIndex: e.device,
				Reason: fmt.Sprintf("%s; delete %s: nothing on it in use or cooling", why, e.id),
			})
			continue
		}
		chosen := r.blocks[i]
		if len(chosen) == 0 {
			continue
		}
		blocks := p.in.Snapshot.ENIs[e.pos].Blocks
		cidrs := make([]netip.Prefix, 0, len(chosen))
		prefixes := true
		for _, b := range chosen {
			cidrs = append(cidrs, blocks[b].CIDR)
			prefixes = prefixes && blocks[b].IsPrefix()
		}
		acts = append(acts, Action{
			Kind: Unassign, ENIID: e.id, DeviceIndex: e.device, Count: len(cidrs), Prefixes: prefixes,
			Release: cidrs,
			Reason:  fmt.Sprintf("%s; unassign %s from %s", why, plural(len(cidrs), "block", "blocks"), e.id),
		})
	}
	return acts
}
