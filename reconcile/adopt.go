package reconcile

import (
	"context"
	"fmt"

	"vpc-cni/store"
)

// Adopt fills a store from EC2's truth with no plan and no EC2 mutation: the
// node, its attached ENIs and their addresses (all free), then restore, in
// the same transaction, so no ADD can take an address restore gives back to
// a running pod; then the host side of the secondary ENIs (idempotent) so
// they are ready. `vpcctl state rebuild` runs it on a fresh store; the next
// pass plans from the whole truth. The caller holds the reconcile lock.
func (r *Runner) Adopt(ctx context.Context, restore func(tx *store.Tx) error) (*Report, error) {
	rep := &Report{Time: r.now()}
	p := &pass{Runner: r, rep: rep}
	if err := p.prepare(ctx); err != nil {
		return rep, err
	}
	truth, err := r.Cloud.InstanceENIs(ctx, p.node.InstanceID)
	rep.Calls = append(rep.Calls, "DescribeNetworkInterfaces")
	if err != nil {
		return rep, fmt.Errorf("reading the node's ENIs from EC2: %w", err)
	}
	now := r.now()
	err = r.Store.Update(func(tx *store.Tx) error {
		snap, err := tx.Snapshot()
		if err != nil {
			return err
		}
		merged, findings := Merge(snap, truth, Evidence{}, now, p.classRules())
		rep.Findings = append(rep.Findings, findings...)
		if err := writeMerge(tx, snap, merged, findings, now); err != nil {
			return err
		}
		p.unready = unready(merged.ENIs)
		if err := persistEffective(tx, p.cfg, now); err != nil {
			return err
		}
		return restore(tx)
	})
	if err != nil {
		return rep, err
	}
	p.setupHosts()
	rep.Duration = r.now().Sub(rep.Time)
	return rep, nil
}
