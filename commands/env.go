package commands

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"vpc-cni/cloud"
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

// storeBudget lets separate processes share one EC2 rate budget in the store.
type storeBudget struct{ st *store.Store }

func (b storeBudget) TakeToken(bucket string, now time.Time, rate, burst float64) (wait time.Duration, err error) {
	err = b.st.Update(func(tx *store.Tx) error {
		wait, err = tx.TakeToken(bucket, now, rate, burst)
		return err
	})
	return wait, err
}

// newRunner wires a reconcile runner to the real EC2, IMDS and kernel.
func newRunner(ctx context.Context, st *store.Store, flags settings.Overrides) (*reconcile.Runner, error) {
	var node store.Node
	err := st.View(func(tx *store.Tx) (err error) { node, _, err = tx.Node(); return err })
	if err != nil && !errors.Is(err, store.ErrNotInitialized) {
		return nil, err
	}
	region := ""
	if os.Getenv("AWS_REGION") == "" && os.Getenv("AWS_DEFAULT_REGION") == "" {
		region = node.Region // learnt once; saves an IMDS call per pass
	}
	cl, err := cloud.New(ctx, cloud.Options{
		Region: region, ClusterName: os.Getenv(settings.ClusterName),
		Budget: storeBudget{st}, UserAgent: "vpc-cni/" + buildVersion,
	})
	if err != nil {
		return nil, err
	}
	return &reconcile.Runner{Store: st, Cloud: cl, Host: reconcile.KernelHost{}, Env: envLookup, Flags: flags}, nil
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
