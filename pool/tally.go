package pool

import (
	"slices"
	"time"
)

// eniTally is one ENI reduced to the numbers the policy decides from.
type eniTally struct {
	pos          int // index in Snapshot.ENIs; -1 for a primary missing from the snapshot
	id           string
	device       int
	primary      bool
	slots        int  // blocks, Releasing ones included: each takes one IPv4 slot
	free         int  // usable addresses in blocks that are not Releasing
	busy         int  // assigned and still-cooling addresses: the ENI must stay
	freePrefixes int  // prefixes whose 16 addresses are all usable
	releasing    bool // an Unassign is in flight on it
	gone         bool // deleted by a release being tried
	noGrow       bool // its subnet is full, or it is the primary under custom networking
	excluded     bool // the primary under custom networking: its free addresses are not the pods'
	notOurs      bool // someone else's: nothing grown, released or deleted; it only takes a slot
	keep         bool // never deleted: the primary, or an ENI vpc-cni did not create
	foreign      bool // another pool's (profiles.go): it only takes its slot and device
	drifted      bool // its groups are not its profile's: deleted once nothing on it is in use
}

// tally is the pool reduced to counts, in addresses. Releasing blocks are
// neither held nor free, but they still take slots.
type tally struct {
	enis         []eniTally // ascending device index
	free         int        // Free, or Cooling past the cooldown
	cooling      int        // Cooling, cooldown not yet passed
	assigned     int
	releasing    int // addresses in Releasing blocks
	freePrefixes int
	// foreignBusy: addresses other pools' pods hold or that cool there;
	// they count against max pods (podRoom), nothing else.
	foreignBusy int
}

func (t *tally) held() int { return t.free + t.cooling + t.assigned }

func newTally(s Snapshot, now time.Time, c Config, perENI int) tally {
	t := tally{enis: make([]eniTally, 0, len(s.ENIs)+1)}
	hasPrimary := false
	for i := range s.ENIs {
		e := &s.ENIs[i]
		hasPrimary = hasPrimary || e.Primary()
		if !e.ServesPool(c.Profile) {
			t.addForeign(i, e, now, c.Cooldown)
			continue
		}
		excluded := e.DeviceIndex < FirstPodDevice(c) || e.NotOurs() || e.GroupsDrift != ""
		et := t.addENI(i, e, now, c.Cooldown, excluded)
		if e.Card != 0 {
			continue // its pods' addresses are counted; it takes none of card 0's slots
		}
		et.noGrow = excluded || now.Before(s.FullSubnets[e.SubnetID])
		et.notOurs, et.keep, et.drifted = e.NotOurs(), !e.Deletable(), e.GroupsDrift != ""
		t.enis = append(t.enis, et)
	}
	if !hasPrimary {
		// The instance always has its primary ENI: keep its slot in the
		// ENI budget, and give it no room, since we know nothing of it.
		t.enis = append(t.enis, eniTally{pos: -1, primary: true, slots: perENI, noGrow: c.CustomNetworking,
			excluded: c.CustomNetworking})
	}
	slices.SortStableFunc(t.enis, func(a, b eniTally) int { return a.device - b.device })
	return t
}

// addForeign counts another pool's ENI: on card 0 it takes a slot and its
// device, and its pods' addresses count against max pods.
func (t *tally) addForeign(pos int, e *ENI, now time.Time, cooldown time.Duration) {
	if e.Card != 0 {
		return
	}
	for b := range e.Blocks {
		if !e.Blocks[b].Releasing {
			c := countBlock(&e.Blocks[b], now, cooldown)
			t.foreignBusy += c.assigned + c.cooling
		}
	}
	t.enis = append(t.enis, eniTally{pos: pos, id: e.ID, device: e.DeviceIndex, primary: e.Primary(), slots: len(e.Blocks),
		noGrow: true, excluded: true, notOurs: true, keep: true, foreign: true})
}

// addENI counts an ENI. An excluded one (the primary under custom
// networking, a not-ours ENI that pods still hold addresses of) adds its
// pods' addresses but nothing free.
func (t *tally) addENI(pos int, e *ENI, now time.Time, cooldown time.Duration, excluded bool) eniTally {
	et := eniTally{pos: pos, id: e.ID, device: e.DeviceIndex, primary: e.Primary(), slots: len(e.Blocks), excluded: excluded}
	for b := range e.Blocks {
		blk := &e.Blocks[b]
		if blk.Releasing {
			et.releasing = true
			t.releasing += len(blk.Addrs)
			continue
		}
		c := countBlock(blk, now, cooldown)
		if excluded {
			c.free = 0
		}
		et.free += c.free
		et.busy += c.assigned + c.cooling
		t.free += c.free
		t.cooling += c.cooling
		t.assigned += c.assigned
		if c.wholeFreePrefix(blk) {
			et.freePrefixes++
			t.freePrefixes++
		}
	}
	return et
}

type blockCount struct{ free, cooling, assigned int }

func countBlock(b *Block, now time.Time, cooldown time.Duration) blockCount {
	var c blockCount
	for _, a := range b.Addrs {
		switch {
		case Usable(a, now, cooldown):
			c.free++
		case a.State == Cooling:
			c.cooling++
		case a.State == Assigned:
			c.assigned++
		}
	}
	return c
}

// releasable reports whether every address of the block is usable, so the
// block may go back to EC2 without taking anything from a pod.
func (c blockCount) releasable(b *Block) bool {
	return len(b.Addrs) > 0 && c.free == len(b.Addrs)
}

func (c blockCount) wholeFreePrefix(b *Block) bool {
	return b.IsPrefix() && c.releasable(b)
}
