package reconcile

import (
	"context"
	"fmt"
	"slices"

	"vpc-cni/settings"
	"vpc-cni/store"
)

// followPrimaryGroups keeps the secondary ENIs vpc-cni created in the primary ENI's security
// groups, as the reference's RefreshSGIDs does: one IMDS read per pass; only
// when the groups differ from the ones learnt does it describe the ENIs and
// modify each one whose groups differ. The learnt groups (which new ENIs
// carry) are updated once every ENI follows, so a failed call is retried by
// the next pass. Under custom networking the configured groups apply instead.
func (p *pass) followPrimaryGroups(ctx context.Context) {
	if p.cfg.Pool.CustomNetworking || p.node.PrimaryMAC == "" {
		return
	}
	groups, err := p.Cloud.ENIGroups(ctx, p.node.PrimaryMAC)
	if err != nil || len(groups) == 0 || sameGroups(groups, p.node.SecurityGroups) {
		if err != nil {
			p.log().Info("primary ENI's security groups not reread", "err", err)
		}
		return
	}
	p.rep.Calls = append(p.rep.Calls, "DescribeNetworkInterfaces")
	enis, err := p.Cloud.InstanceENIs(ctx, p.node.InstanceID)
	if err != nil {
		p.rep.Failed = append(p.rep.Failed, fmt.Sprintf("security groups %v: describing the ENIs: %v", groups, err))
		return
	}
	failed := false
	for _, e := range enis {
		if !createdHere(e, p.node.InstanceID) || e.Tags[settings.ProfileTag] != "" || sameGroups(e.SecurityGroups, groups) {
			continue // only ENIs vpc-cni created for the default pool: an adopted or not-ours ENI's groups are its owner's, a profile's are the profile's
		}
		p.rep.Calls = append(p.rep.Calls, "ModifyNetworkInterfaceAttribute")
		if err := p.Cloud.SetENIGroups(ctx, e.ID, groups); err != nil {
			p.rep.Failed = append(p.rep.Failed, fmt.Sprintf("security groups %v on %s: %v", groups, e.ID, err))
			failed = true
			continue
		}
		p.log().Info("ENI follows the primary ENI's security groups", "eni", e.ID, "was", e.SecurityGroups, "now", groups)
	}
	if !failed {
		p.storeGroups(groups)
	}
}

// storeGroups records the primary ENI's groups, which new ENIs carry.
func (p *pass) storeGroups(groups []string) {
	if err := p.updateNode(func(n *store.Node) { n.SecurityGroups = groups }); err != nil {
		p.rep.Failed = append(p.rep.Failed, "storing the primary ENI's security groups: "+err.Error())
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
