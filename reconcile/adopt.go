package reconcile

import (
	"context"
	"fmt"
	"slices"
	"time"

	"vpc-cni/cloud"
	"vpc-cni/pool"
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
	p := &pass{Runner: r, rep: rep, rebuilding: true}
	if err := p.prepare(ctx); err != nil {
		return rep, err
	}
	truth, err := p.adoptTruth(ctx)
	if err != nil {
		return rep, err
	}
	p.resolveForDrift(ctx, truth)
	now := r.now()
	err = p.update(func(tx *store.Tx) error {
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
		if err := adoptIPv6(tx, p.cfg.Pool, p.node.PrimaryENI, truth, now); err != nil {
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

// adoptTruth reads the node's ENIs: from EC2, or in IMDS-only mode from
// IMDS alone (no EC2 call at all).
func (p *pass) adoptTruth(ctx context.Context) ([]cloud.ENIInfo, error) {
	if p.cfg.IMDSOnly {
		return p.observeIMDSOnly(ctx)
	}
	truth, err := p.Cloud.InstanceENIs(ctx, p.node.InstanceID)
	p.rep.Calls = append(p.rep.Calls, "DescribeNetworkInterfaces")
	if err != nil {
		return nil, fmt.Errorf("reading the node's ENIs from EC2: %w", err)
	}
	return truth, nil
}

// adoptIPv6 records the primary ENI's first /80 as the IPv6 pool when the
// mode gives pods IPv6 and the store has none (a rebuilt file), so the
// pods' /128s can be restored from it. Which /80s vpc-cni assigned itself
// is not known any more: none is released until a pass assigns one.
func adoptIPv6(tx *store.Tx, c pool.Config, primary string, truth []cloud.ENIInfo, now time.Time) error {
	if !c.PodIPv6() {
		return nil
	}
	if rec, _, err := tx.IPv6Pool(); err != nil || rec.Prefix.IsValid() {
		return err
	}
	i := slices.IndexFunc(truth, func(e cloud.ENIInfo) bool { return e.ID == primary })
	if i < 0 || len(truth[i].IPv6Prefixes) == 0 {
		return nil // the next pass assigns one
	}
	return tx.PutIPv6Pool(store.IPv6Pool{ENIID: primary, Prefix: truth[i].IPv6Prefixes[0], UpdatedAt: now})
}
