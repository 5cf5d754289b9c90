package commands

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/urfave/cli/v2"

	"vpc-cni/reconcile"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// envLookup reads the process environment (tests replace it).
var envLookup settings.Lookup = os.LookupEnv

// stateDirFlag lets --state-dir follow the command too (vpcctl pool status
// --state-dir X), as kubectl users expect; the global flag is the default.
func stateDirFlag() cli.Flag {
	return &cli.StringFlag{Name: "state-dir", Usage: "the same as the global --state-dir"}
}

// stateDir is the innermost --state-dir given, else the global one (or its
// environment variable, or the default).
func stateDir(c *cli.Context) string {
	lineage := c.Lineage()
	for _, ctx := range lineage {
		if slices.Contains(ctx.LocalFlagNames(), "state-dir") {
			return ctx.String("state-dir")
		}
	}
	return lineage[len(lineage)-1].String("state-dir") // the global flag's env or default
}

// openStore opens the state dir named by --state-dir.
func openStore(c *cli.Context) (*store.Store, error) {
	dir := stateDir(c)
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
