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

// prefixFallback is how long growth uses single IPs after the subnet had no
// free /28 for a prefix: a fragmented subnet rarely frees a whole /28 soon,
// and single addresses serve pods meanwhile.
const prefixFallback = 10 * time.Minute

// noFreePrefix reports EC2's refusal to delegate a prefix because the subnet
// has no free aligned /28, though it may still have single addresses.
func noFreePrefix(err error) bool { return cloud.IsKind(err, cloud.KindNoFreePrefix) }

func isGrowth(k pool.ActionKind) bool { return k == pool.CreateENI || k == pool.Assign }

// noteNoPrefixes starts (or extends) the prefix fallback.
func noteNoPrefixes(tx *store.Tx, now time.Time) error {
	until := now.Add(prefixFallback)
	if err := tx.PutNoPrefixesUntil(until); err != nil {
		return err
	}
	if err := tx.AddCounter("prefix_fallbacks", 1); err != nil {
		return err
	}
	return tx.AddEvent(store.Event{Time: now, Kind: "prefix-fallback",
		Message: fmt.Sprintf("no free /28 in the subnet: growing single IPs until %s", until.Format(time.RFC3339))})
}

// growSingles follows a prefix growth that failed for want of a free /28
// (commit has started the fallback) with one grow-only round that plans
// single IPs, so pods get addresses in this pass rather than the next. It
// re-reads EC2 (the first round changed it) and plans afresh: at most one
// assign on each ENI with free slots (the steps after the failed one were
// skipped) and, where the target needs more, new ENIs with single addresses
// up to the instance's limits. On a t3.small that is one assign and two
// creates (TestPrefixFallbackGrowsSingleIPs). It asks for no prefix: the
// fallback is in force for this plan.
func (p *pass) growSingles(ctx context.Context) error {
	first := slices.Clone(p.rep.Plan.Actions)
	truth, err := p.Cloud.InstanceENIs(ctx, p.node.InstanceID)
	p.rep.Calls = append(p.rep.Calls, "DescribeNetworkInterfaces")
	if err != nil {
		return fmt.Errorf("re-reading the node's ENIs from EC2: %w", err)
	}
	steps, err := p.mergeAndPlan(ctx, truth, true)
	p.rep.Plan.Actions = append(first, p.rep.Plan.Actions...)
	if err != nil {
		return err
	}
	if err := p.place(ctx, steps); err != nil {
		return err
	}
	return p.settle(ctx, p.execute(ctx, steps, truth), truth)
}
