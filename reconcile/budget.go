package reconcile

import (
	"errors"
	"time"

	"vpc-cni/store"
)

// StoreBudget lets separate processes share one EC2 rate budget in the store.
type StoreBudget struct{ Store *store.Store }

// TakeToken implements cloud.RateBudget.
func (b StoreBudget) TakeToken(bucket string, now time.Time, rate, burst float64) (wait time.Duration, err error) {
	err = b.Store.Update(func(tx *store.Tx) error {
		wait, err = tx.TakeToken(bucket, now, rate, burst)
		return err
	})
	if errors.Is(err, store.ErrNotInitialized) && !errors.Is(err, store.ErrReplaced) {
		// A fresh node's first pass, before its first write creates the
		// file: a handful of calls, under the SDK's own retry quota. A file
		// removed under the pass stops its calls instead.
		return 0, nil
	}
	return wait, err
}
