package pass

import (
	"context"
	"fmt"
	"time"

	"vpc-cni/reconcile"
	"vpc-cni/store"
)

// Exclusive bounds work that rewrites the node outside a pass (state
// rebuild, migrate, pool warm's lost state) by timeout and takes the
// reconcile lock, waiting up to that timeout; release undoes both.
func Exclusive(parent context.Context, st *store.Store, timeout time.Duration) (ctx context.Context, release func(), err error) {
	ctx, cancel := Context(parent, timeout)
	unlock, held, err := st.LockReconcile(true, timeout)
	if err == nil && !held {
		err = fmt.Errorf("%w %s for all of --timeout %s", reconcile.ErrLockHeld, st.ReconcileLockPath(), timeout)
	} else if err != nil {
		err = fmt.Errorf("taking the reconcile lock %s: %w", st.ReconcileLockPath(), err)
	}
	if err != nil {
		cancel()
		return nil, nil, err
	}
	return ctx, func() { unlock(); cancel() }, nil
}
