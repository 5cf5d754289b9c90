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

// kRefillLastLow is the time of the last ADD that left the pool low while a
// claim stood: the detached pass gathers the burst until it goes quiet.
var kRefillLastLow = []byte("refill-last-low")

// A detached refill plans once no ADD has left the pool low for RefillQuiet,
// and at the latest RefillGather after its claim: a burst is then served by
// one pass (one EC2 call per ENI) instead of one pass every few ADDs, and its
// ADDs share neither the CPU nor the state file with passes while it lasts.
// ADDs that find no free address meanwhile grow the pool inline, as before.
const (
	RefillQuiet  = 100 * time.Millisecond
	RefillGather = time.Second
)

// RefillClaimTTL bounds how long a claim stands without a pass planning:
// the detached pass's --timeout, lock wait included.
const RefillClaimTTL = 2 * time.Minute

// claimRefill claims the refill at now unless a claim younger than
// RefillClaimTTL stands; it reports whether the caller should start it.
func (t *Tx) claimRefill(now time.Time) (bool, error) {
	b := t.bucket(bState)
	if v := b.Get(kRefillClaim); len(v) == 8 && now.Sub(readTime(v)) < RefillClaimTTL {
		return false, b.Put(kRefillLastLow, appendTime(nil, now))
	}
	if err := b.Put(kRefillLastLow, appendTime(nil, now)); err != nil {
		return false, err
	}
	return true, b.Put(kRefillClaim, appendTime(nil, now))
}

// ClearRefillClaim is called by a pass in the transaction where it plans:
// its plan serves every ADD taken so far.
func (t *Tx) ClearRefillClaim() error { return t.bucket(bState).Delete(kRefillClaim) }

// RefillClaimed reports whether a refill claim stands (younger than
// RefillClaimTTL). A detached refill that finds none once it holds the
// reconcile lock was served by a pass that planned after its ADD claimed.
func (t *Tx) RefillClaimed(now time.Time) bool {
	v := t.bucket(bState).Get(kRefillClaim)
	return len(v) == 8 && now.Sub(readTime(v)) < RefillClaimTTL
}

// RefillWait is how long the detached refill should still wait before it
// plans (zero: now, or no claim stands).
func (t *Tx) RefillWait(now time.Time) time.Duration {
	b := t.bucket(bState)
	claim, last := b.Get(kRefillClaim), b.Get(kRefillLastLow)
	if len(claim) != 8 || now.Sub(readTime(claim)) >= RefillClaimTTL {
		return 0
	}
	lastLow := readTime(claim)
	if len(last) == 8 {
		lastLow = readTime(last)
	}
	return refillWait(readTime(claim), lastLow, now)
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
