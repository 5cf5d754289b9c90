package reconcile

import (
	"context"
	"fmt"
	"slices"

	"vpc-cni/cloud"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// groupSyncer reads the primary ENI's security groups and sets an ENI's;
// *cloud.Client implements it.
type groupSyncer interface {
	ENIGroups(ctx context.Context, mac string) ([]string, error)
	SetENIGroups(ctx context.Context, eniID string, groups []string) error
}

// followPrimaryGroups keeps our secondary ENIs in the primary ENI's security
// groups, as the reference's RefreshSGIDs does: one IMDS read per pass; only
// when the groups differ from the ones learnt does it describe the ENIs and
// modify each one whose groups differ. The learnt groups (which new ENIs
// carry) are updated once every ENI follows, so a failed call is retried by
// the next pass. Under custom networking the configured groups apply instead.
func (r *Runner) followPrimaryGroups(ctx context.Context, node store.Node, cfg settings.Effective, rep *Report) {
	gs, ok := r.Cloud.(groupSyncer)
	if !ok || cfg.Pool.CustomNetworking || node.PrimaryMAC == "" {
		return
	}
	groups, err := gs.ENIGroups(ctx, node.PrimaryMAC)
	if err != nil || len(groups) == 0 || sameGroups(groups, node.SecurityGroups) {
		if err != nil {
			r.log().Info("primary ENI's security groups not reread", "err", err)
		}
		return
	}
	rep.Calls = append(rep.Calls, "DescribeNetworkInterfaces")
	enis, err := r.Cloud.InstanceENIs(ctx, node.InstanceID)
	if err != nil {
		rep.Failed = append(rep.Failed, fmt.Sprintf("security groups %v: describing the ENIs: %v", groups, err))
		return
	}
	failed := false
	for _, e := range enis {
		if e.DeviceIndex <= 0 || e.Tags[cloud.TagInstanceID] != node.InstanceID || sameGroups(e.SecurityGroups, groups) {
			continue
		}
		rep.Calls = append(rep.Calls, "ModifyNetworkInterfaceAttribute")
		if err := gs.SetENIGroups(ctx, e.ID, groups); err != nil {
			rep.Failed = append(rep.Failed, fmt.Sprintf("security groups %v on %s: %v", groups, e.ID, err))
			failed = true
			continue
		}
		r.log().Info("ENI follows the primary ENI's security groups", "eni", e.ID, "was", e.SecurityGroups, "now", groups)
	}
	if !failed {
		r.storeGroups(groups, rep)
	}
}

// storeGroups records the primary ENI's groups, which new ENIs carry.
func (r *Runner) storeGroups(groups []string, rep *Report) {
	if err := r.updateNode(func(n *store.Node) { n.SecurityGroups = groups }); err != nil {
		rep.Failed = append(rep.Failed, "storing the primary ENI's security groups: "+err.Error())
	}
}

// updateNode changes the learnt node in one transaction (nothing when the
// node was never learnt).
func (r *Runner) updateNode(change func(*store.Node)) error {
	return r.Store.Update(func(tx *store.Tx) error {
		stored, known, err := tx.Node()
		if err != nil || !known {
			return err
		}
		change(&stored)
		return tx.PutNode(stored)
	})
}

// sameGroups compares two group lists as sets: EC2 does not promise an order.
func sameGroups(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}
