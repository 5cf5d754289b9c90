package store

import "time"

// The refill claim coalesces the background refills of a burst. The ADD
// that leaves the pool under its target and finds no claim starts the
// detached pass; the ADDs after it leave the work to that pass, which waits
// for the reconcile lock and, when it plans, clears the claim so that the
// next low ADD starts another. A claim carries its time: one whose pass was
// killed before it planned lapses after RefillClaimTTL (and any pass that
// plans clears it sooner).
var kRefillClaim = []byte("refill-claim")

// kRefillLastLow is the time of the last ADD that left the pool low.
var kRefillLastLow = []byte("refill-last-low")

// A refill claimed after a quiet spell plans at once: a lone pod's address is
// back in the pool right away, and a pass that overshoots by the pods that
// came meanwhile keeps churn from starting one pass per pod. A refill claimed
// while ADDs keep leaving the pool low (within RefillGather of the last one:
// a burst under way) gathers the rest of the burst: it plans once no ADD has
// left the pool low for RefillQuiet, at the latest RefillGather after its
// claim. A burst is then served by two passes (one EC2 call per ENI each)
// instead of one every few ADDs, and its ADDs share neither the CPU nor the
// state file with passes while it lasts. ADDs that find no free address
// meanwhile grow the pool inline.
const (
	RefillQuiet  = 250 * time.Millisecond
	RefillGather = 2 * time.Second
)

// RefillClaimTTL bounds how long a claim stands without a pass planning:
// the detached pass's --timeout, lock wait included.
const RefillClaimTTL = 2 * time.Minute

// A claim is its time, then gatherFlag when it was claimed in a burst.
const gatherFlag = 'g'

// claimRefill claims the refill at now unless a claim younger than
// RefillClaimTTL stands; it reports whether the caller should start it.
func (t *Tx) claimRefill(now time.Time) (bool, error) {
	b := t.bucket(bState)
	prev := b.Get(kRefillLastLow)
	inBurst := len(prev) == 8 && now.Sub(readTime(prev)) < RefillGather
	if err := b.Put(kRefillLastLow, appendTime(nil, now)); err != nil {
		return false, err
	}
	if _, ok := t.standingClaim(now); ok {
		return false, nil
	}
	claim := appendTime(nil, now)
	if inBurst {
		claim = append(claim, gatherFlag)
	}
	return true, b.Put(kRefillClaim, claim)
}

// standingClaim is the claim younger than RefillClaimTTL, if any.
func (t *Tx) standingClaim(now time.Time) (v []byte, ok bool) {
	v = t.bucket(bState).Get(kRefillClaim)
	return v, len(v) >= 8 && now.Sub(readTime(v[:8])) < RefillClaimTTL
}

// ClearRefillClaim is called by a pass in the transaction where it plans:
// its plan serves every ADD taken so far.
func (t *Tx) ClearRefillClaim() error { return t.bucket(bState).Delete(kRefillClaim) }

// RefillClaimed reports whether a refill claim stands (younger than
// RefillClaimTTL). A detached refill that finds none once it holds the
// reconcile lock was served by a pass that planned after its ADD claimed.
func (t *Tx) RefillClaimed(now time.Time) bool {
	_, ok := t.standingClaim(now)
	return ok
}

// RefillWait is how long the detached refill should still wait before it
// plans: zero when no claim stands or it was claimed after a quiet spell.
func (t *Tx) RefillWait(now time.Time) time.Duration {
	claim, ok := t.standingClaim(now)
	if !ok || len(claim) != 9 || claim[8] != gatherFlag {
		return 0
	}
	lastLow := readTime(claim[:8])
	if last := t.bucket(bState).Get(kRefillLastLow); len(last) == 8 {
		lastLow = readTime(last)
	}
	return refillWait(readTime(claim[:8]), lastLow, now)
}

// refillWait: until the burst has been quiet for RefillQuiet, at most until
// RefillGather after the claim.
func refillWait(claimed, lastLow, now time.Time) time.Duration {
	due := lastLow.Add(RefillQuiet)
	if limit := claimed.Add(RefillGather); due.After(limit) {
		due = limit
	}
	return max(due.Sub(now), 0)
}
