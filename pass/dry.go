package pass

import (
	"context"
	"errors"

	"vpc-cni/reconcile"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// DryRun plans in memory and changes nothing.
func DryRun(ctx context.Context, st *store.Store, in settings.Inputs, o Options) (*reconcile.Report, error) {
	runner, err := o.NewRunner(ctx, st, in) // per-attempt HTTP timeouts come from ctx's deadline
	if err != nil {
		return nil, Classify(ctx, err)
	}
	rep, err := runner.Run(ctx, reconcile.Options{DryRun: true})
	warnChanges(rep, o)
	return rep, Classify(ctx, err)
}

// Fresh is the dry run of a node without state in dir: the first pass
// planned in memory from IMDS and EC2, so an operator sees what it would do
// to the node's ENIs before it does it. It creates no directory or file.
// It is nil, with no error, when the node has state (DryRun is then its dry
// run).
func Fresh(ctx context.Context, dir string, in settings.Inputs, o Options) (*reconcile.FirstPass, error) {
	if _, err := store.Open(dir, store.Options{ReadOnly: true}); !errors.Is(err, store.ErrNotInitialized) {
		return nil, nil
	}
	runner, err := o.NewRunner(ctx, store.Absent(dir), in)
	if err != nil {
		return nil, Classify(ctx, err)
	}
	fp, err := runner.PlanFirstPass(ctx)
	warnChanges(fp.Report, o)
	return fp, Classify(ctx, err)
}
