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

// RefillClaimTTL bounds how long a claim stands without a pass planning:
// the detached pass's --timeout, lock wait included.
const RefillClaimTTL = 2 * time.Minute

// claimRefill claims the refill at now unless a claim younger than
// RefillClaimTTL stands; it reports whether the caller should start it.
func (t *Tx) claimRefill(now time.Time) (bool, error) {
	b := t.bucket(bState)
	if v := b.Get(kRefillClaim); len(v) == 8 && now.Sub(readTime(v)) < RefillClaimTTL {
		return false, nil
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
