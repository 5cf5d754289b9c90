package reconcile

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"vpc-cni/cloud"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// NewRunner wires a runner to the real EC2, IMDS (through the SDK's usual
// environment) and kernel. in is where the knobs are read from under the
// store's overrides: the process environment and the configuration file.
func NewRunner(ctx context.Context, st *store.Store, in settings.Inputs, userAgent string) (*Runner, error) {
	var node store.Node
	err := st.View(func(tx *store.Tx) (err error) { node, _, err = tx.Node(); return err })
	if err != nil && !errors.Is(err, store.ErrNotInitialized) {
		return nil, err
	}
	region := ""
	if os.Getenv("AWS_REGION") == "" && os.Getenv("AWS_DEFAULT_REGION") == "" {
		if node.VouchedFor(BootID(), "") { // a file from another instance may name another region
			region = node.Region // learnt once; saves an IMDS call per pass
		}
	}
	cluster, _, _ := in.Lookup(settings.ClusterName)
	describe, mutating, err := settings.EC2Budgets(in)
	if err != nil {
		return nil, ConfigError{err}
	}
	var budget cloud.RateBudget = StoreBudget{st}
	if st.ReadOnly() {
		budget = nil // a dry run writes nothing, the budget's tokens included; it only describes
	}
	cl, err := cloud.New(ctx, cloud.Options{Region: region, ClusterName: cluster, UserAgent: userAgent,
		HTTPTimeout: cloud.AttemptTimeout(ctx), Budget: budget,
		DescribeBudget: cloud.BucketRate(describe), MutatingBudget: cloud.BucketRate(mutating),
		// The plugin, outside the pod with the projected token, uses the pod's (cloud.HandoffFile).
		Handoff: filepath.Join(st.Dir(), cloud.HandoffFile), HandoffReadOnly: st.ReadOnly()})
	if err != nil {
		return nil, err
	}
	return &Runner{Store: st, Cloud: cl, Host: KernelHost{}, Env: in.Env, File: in.File, Names: in.Names}, nil
}
