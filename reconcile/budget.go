package reconcile

import (
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
	return wait, err
}
