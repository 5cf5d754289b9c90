package podgc

import (
	"errors"
	"time"

	"vpc-cni/store"
)

// Collect is Run on this node's kernel now, its veths named with prefix;
// a state dir that was never initialised has nothing to collect.
func Collect(st *store.Store, prefix string, dryRun bool) (Report, error) {
	rep, err := Run(st, Kernel{VethPrefix: prefix}, dryRun, time.Now())
	if errors.Is(err, store.ErrNotInitialized) {
		return rep, nil
	}
	return rep, err
}
