package reconcile

import (
	"context"
	"errors"
	"os"

	"vpc-cni/cloud"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// NewRunner wires a runner to the real EC2, IMDS (through the SDK's usual
// environment) and kernel. env is where the targets are read from.
func NewRunner(ctx context.Context, st *store.Store, env settings.Lookup, flags settings.Overrides, userAgent string) (*Runner, error) {
	var node store.Node
	err := st.View(func(tx *store.Tx) (err error) { node, _, err = tx.Node(); return err })
	if err != nil && !errors.Is(err, store.ErrNotInitialized) {
		return nil, err
	}
	region := ""
	if os.Getenv("AWS_REGION") == "" && os.Getenv("AWS_DEFAULT_REGION") == "" {
		region = node.Region // learnt once; saves an IMDS call per pass
	}
	cluster, _ := env(settings.ClusterName)
	describe, mutating, err := settings.EC2Budgets(env)
	if err != nil {
		return nil, ConfigError{err}
	}
	cl, err := cloud.New(ctx, cloud.Options{Region: region, ClusterName: cluster, UserAgent: userAgent,
		Budget:         StoreBudget{st},
		DescribeBudget: cloud.BucketRate(describe), MutatingBudget: cloud.BucketRate(mutating)})
	if err != nil {
		return nil, err
	}
	return &Runner{Store: st, Cloud: cl, Host: KernelHost{}, Env: env, Flags: flags}, nil
}
