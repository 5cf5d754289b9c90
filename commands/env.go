package commands

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"vpc-cni/reconcile"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// envLookup reads the process environment (tests replace it).
var envLookup settings.Lookup = os.LookupEnv

// openStore opens the state dir named by --state-dir.
func openStore(c *cli.Context) (*store.Store, error) {
	dir := c.String("state-dir")
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		return nil, fmt.Errorf("state dir %s: %w", dir, err)
	}
	return st, nil
}

// newRunner wires a reconcile runner to the real EC2, IMDS and kernel.
func newRunner(ctx context.Context, st *store.Store, flags settings.Overrides) (*reconcile.Runner, error) {
	return reconcile.NewRunner(ctx, st, envLookup, flags, "vpc-cni/"+buildVersion)
}

// classifyRunError turns a reconcile failure into the CLI's exit code.
func classifyRunError(err error) error {
	if err == nil {
		return nil
	}
	if reconcile.IsConfigError(err) {
		return asUsage(err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w (raise --timeout?)", err)
	}
	return err
}
