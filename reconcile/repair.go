package reconcile

import (
	"cmp"
	"context"
	"fmt"

	"net/netip"

	"vpc-cni/cloud"
	"vpc-cni/pool"
	"vpc-cni/store"
)

// repairIntents finishes or undoes the EC2 mutations of a pass that died (we
// hold the lock, so every intent left is an orphan), then re-reads the truth
// if anything changed. Nothing leaks, nothing is owned twice:
//   - create: replaying CreateNetworkInterface with the same ClientToken returns
//     the ENI if it was made; if it is not attached to us it is deleted.
//   - assign: nothing to do; the merge adopts whatever EC2 assigned.
//   - unassign / delete: done again; NotFound counts as done.
func (r *Runner) repairIntents(ctx context.Context, node store.Node, truth []cloud.ENIInfo, rep *Report) []cloud.ENIInfo {
	if len(rep.orphans) == 0 {
		return truth
	}
	changed := false
	for _, in := range rep.orphans {
		did, err := r.repair(ctx, node, in, truth, rep)
		changed = changed || did
		if err != nil {
			rep.Failed = append(rep.Failed, fmt.Sprintf("repairing %s intent %s: %v", in.Kind, in.ID, err))
			continue
		}
		r.finishIntent(in, rep)
	}
	if !changed {
		return truth
	}
	rep.Calls = append(rep.Calls, "DescribeNetworkInterfaces")
	if fresh, err := r.Cloud.InstanceENIs(ctx, node.InstanceID); err == nil {
		return fresh
	}
	return truth
}

func (r *Runner) repair(ctx context.Context, node store.Node, in store.Intent, truth []cloud.ENIInfo, rep *Report) (bool, error) {
	switch in.Kind {
	case pool.CreateENI:
		rep.Calls = append(rep.Calls, "CreateNetworkInterface")
		// The very subnet and groups the dead pass asked for (older intents
		// lack them: the node's own), or EC2 answers IdempotentParameterMismatch.
		subnet, groups := cmp.Or(in.SubnetID, node.SubnetID), in.Groups
		if in.SubnetID == "" {
			groups = node.SecurityGroups
		}
		eni, err := r.Cloud.CreateENI(ctx, cloud.CreateENIRequest{SubnetID: subnet, Groups: groups,
			Count: in.Count, Prefixes: in.Prefixes, InstanceID: node.InstanceID, ClientToken: in.ID, Now: in.Started})
		if err != nil {
			return false, err
		}
		if _, attached := findENI(truth, eni.ID); attached {
			return false, nil // the merge adopts it; finishAttaches sets delete-on-termination
		}
		return true, r.deleteWhenDetached(ctx, eni.ID, rep)
	case pool.Unassign:
		info, ok := findENI(truth, in.ENIID)
		still := stillHeld(info, in.Blocks)
		if !ok || len(still) == 0 {
			return false, nil
		}
		rep.Calls = append(rep.Calls, "UnassignPrivateIpAddresses")
		return true, r.Cloud.UnassignAddresses(ctx, in.ENIID, still)
	case pool.DeleteENI:
		return true, r.deleteENI(ctx, node, in.ENIID, truth, rep)
	}
	return false, nil
}

// finishAttaches sets delete-on-termination on our attached ENIs that lack
// it: a pass killed after the attach, or whose Modify call failed, left them
// so, and they would outlive the instance.
func (r *Runner) finishAttaches(ctx context.Context, truth []cloud.ENIInfo, rep *Report) {
	for _, t := range truth {
		if !t.Attached || t.DeviceIndex == 0 || t.DeleteOnTermination || t.AttachmentID == "" ||
			t.Tags[cloud.TagInstanceID] == "" {
			continue
		}
		rep.Calls = append(rep.Calls, "ModifyNetworkInterfaceAttribute")
		if err := r.Cloud.SetDeleteOnTermination(ctx, t.ID, t.AttachmentID); err != nil {
			rep.Failed = append(rep.Failed, fmt.Sprintf("delete-on-termination on %s: %v", t.ID, err))
		}
	}
}

func stillHeld(info cloud.ENIInfo, blocks []netip.Prefix) []netip.Prefix {
	have := map[netip.Prefix]bool{}
	for _, b := range truthBlocks(info) {
		have[b] = true
	}
	var out []netip.Prefix
	for _, b := range blocks {
		if have[b] {
			out = append(out, b)
		}
	}
	return out
}

// finishIntent drops the intent and clears releasing marks it left behind.
func (r *Runner) finishIntent(in store.Intent, rep *Report) {
	err := r.Store.Update(func(tx *store.Tx) error {
		// The release is done in EC2: drop the blocks now, never unmark them,
		// or a pod could take an address EC2 no longer gives this node.
		switch in.Kind {
		case pool.Unassign:
			if err := tx.RemoveBlocks(in.ENIID, in.Blocks); err != nil {
				return err
			}
		case pool.DeleteENI:
			if err := tx.DeleteENI(in.ENIID); err != nil {
				return err
			}
		}
		if err := tx.AddEvent(store.Event{Time: r.now(), Kind: "repaired",
			Message: fmt.Sprintf("repaired the %s intent %s left by an interrupted pass", in.Kind, in.ID)}); err != nil {
			return err
		}
		return tx.DeleteIntent(in.ID)
	})
	if err != nil {
		rep.Failed = append(rep.Failed, fmt.Sprintf("dropping intent %s: %v", in.ID, err))
	}
}
