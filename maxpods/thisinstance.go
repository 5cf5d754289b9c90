package maxpods

import (
	"context"
	"time"

	"vpc-cni/settings"
	"vpc-cni/store"
)

// IMDSTimeout bounds ThisInstanceAt's IMDS reads.
const IMDSTimeout = 30 * time.Second

// ThisInstanceAt is ThisInstance with the state in dir: a state file that is
// missing (an image), or cannot be read, leaves the built-in table for
// IMDS's instance type.
func ThisInstanceAt(ctx context.Context, dir string, in settings.Inputs) (Report, error) {
	ctx, cancel := context.WithTimeout(ctx, IMDSTimeout)
	defer cancel()
	st, err := store.Open(dir, store.Options{ReadOnly: true})
	if err != nil {
		st = nil
	}
	return ThisInstance(ctx, st, in)
}
