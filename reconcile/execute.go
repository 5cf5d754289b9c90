package reconcile

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"vpc-cni/cloud"
	"vpc-cni/pool"
)

// result is what one step achieved.
type result struct {
	step
	Created *cloud.ENIInfo // CreateENI: the attached ENI
	Blocks  []netip.Prefix // Assign: the new blocks
	Done    bool
	Err     error
}

// execute runs the steps in order. It stops at throttling (later steps would
// only add load) and at subnet exhaustion for growth.
func (p *pass) execute(ctx context.Context, steps []step, truth []cloud.ENIInfo) []result {
	out := make([]result, 0, len(steps))
	stopped := false
	for _, s := range steps {
		res := result{step: s}
		if stopped {
			res.Err = errSkipped
			out = append(out, res)
			continue
		}
		switch {
		case s.placeErr != nil:
			res.Err = s.placeErr
		case s.Kind == pool.CreateENI && s.Place.byTag: // never an ENI with EC2's default group
			res.Err = fmt.Errorf("profile %s: its security groups by tag were not resolved", s.Place.Profile)
		case s.Kind == pool.CreateENI:
			res.Created, res.Err = p.createENI(ctx, s)
		case s.Kind == pool.Assign:
			p.rep.Calls = append(p.rep.Calls, "AssignPrivateIpAddresses")
			res.Blocks, res.Err = p.Cloud.AssignAddresses(ctx, s.ENIID, s.Count, s.Prefixes)
			checkpoint(cpAssigned)
		case s.Kind == pool.Unassign:
			p.rep.Calls = append(p.rep.Calls, "UnassignPrivateIpAddresses")
			res.Err = p.Cloud.UnassignAddresses(ctx, s.ENIID, s.Release)
			checkpoint(cpUnassigned)
		case s.Kind == pool.DeleteENI:
			res.Err = p.deleteENI(ctx, s.ENIID, truth)
		}
		res.Done = res.Err == nil
		if res.Err != nil {
			p.rep.Failed = append(p.rep.Failed, fmt.Sprintf("%s %s: %v", s.Kind, s.ENIID, res.Err))
			stopped = cloud.Classify(res.Err).StopsPass() || ctx.Err() != nil
		}
		out = append(out, res)
	}
	return out
}

var errSkipped = fmt.Errorf("skipped: an earlier call in this pass failed")

// errVetoed: the kernel routes an address of the release to a running pod
// (guard.go); no call was made.
var errVetoed = errors.New("held for a running pod")

// createENI creates the ENI with its addresses and tags in one call, attaches
// it and sets delete-on-termination. A failed attach deletes the new ENI.
func (p *pass) createENI(ctx context.Context, s step) (*cloud.ENIInfo, error) {
	p.rep.Calls = append(p.rep.Calls, "CreateNetworkInterface")
	eni, err := p.Cloud.CreateENI(ctx, cloud.CreateENIRequest{
		SubnetID: s.Place.SubnetID, Groups: s.Place.Groups, Count: s.Count, Prefixes: s.Prefixes,
		InstanceID: p.node.InstanceID, ClientToken: s.Intent, Now: s.Started,
		Tags: createTags(profileTags(p.cfg.AdditionalENITags, s.Place.Profile), s.Intent),
	})
	if err != nil {
		return nil, err
	}
	checkpoint(cpCreated)
	p.rep.Calls = append(p.rep.Calls, "AttachNetworkInterface")
	attachment, err := p.Cloud.AttachENI(ctx, eni.ID, p.node.InstanceID, s.DeviceIndex)
	checkpoint(cpAttached)
	if err != nil {
		p.rep.Calls = append(p.rep.Calls, "DeleteNetworkInterface")
		if derr := p.Cloud.DeleteENI(ctx, eni.ID); derr != nil {
			return nil, fmt.Errorf("attach failed (%v) and so did deleting the new ENI %s: %w", err, eni.ID, derr)
		}
		return nil, err
	}
	p.rep.Calls = append(p.rep.Calls, "ModifyNetworkInterfaceAttribute")
	if err := p.Cloud.SetDeleteOnTermination(ctx, eni.ID, attachment); err != nil {
		// Not fatal: the ENI works; the leaked-ENI sweep covers a terminated instance.
		p.log().Warn("delete-on-termination not set", "eni", eni.ID, "err", err)
	}
	eni.AttachmentID, eni.Attached, eni.DeviceIndex = attachment, true, s.DeviceIndex
	return &eni, nil
}

// deleteENI tears down the host side, detaches and deletes. EC2 needs a moment
// after the detach before the delete is accepted.
//
// The last word on "only ENIs vpc-cni created": whatever the plan says, an
// ENI whose EC2 description and tags do not say this node created it is
// neither detached nor deleted.
func (p *pass) deleteENI(ctx context.Context, eniID string, truth []cloud.ENIInfo) error {
	info, attached := findENI(truth, eniID)
	if !attached { // a repaired delete whose detach went through: ask EC2 what it is
		p.rep.Calls = append(p.rep.Calls, "DescribeNetworkInterfaces")
		var err error
		if info, err = p.Cloud.ENIByID(ctx, eniID); cloud.IsKind(err, cloud.KindNotFound) {
			return nil
		} else if err != nil {
			return err
		}
	}
	if !createdHere(info, p.node.InstanceID) {
		return fmt.Errorf("refusing to detach or delete %s: EC2 does not show it as created by vpc-cni for %s (description %q, instance tag %q)",
			eniID, p.node.InstanceID, info.Description, info.Tags[cloud.TagInstanceID])
	}
	if why := p.vetoed(info); why != "" { // before the teardown: the pod's traffic still uses its table
		return fmt.Errorf("%w: not detaching or deleting %s: %s", errVetoed, eniID, why)
	}
	p.markDeleting(eniID)
	if p.Host != nil && attached {
		e := pool.ENI{ID: eniID, DeviceIndex: info.DeviceIndex, MAC: info.MAC, PrimaryIP: info.PrimaryIP}
		e.SubnetID = info.SubnetID
		if err := p.Host.TeardownENI(e, p.subnetOf(ctx, e)); err != nil {
			p.log().Warn("host teardown", "eni", eniID, "err", err)
		}
	}
	if attached && info.AttachmentID != "" {
		p.rep.Calls = append(p.rep.Calls, "DetachNetworkInterface")
		if err := p.Cloud.DetachENI(ctx, info.AttachmentID, false); err != nil && cloud.Classify(err) != cloud.KindNotFound {
			return err
		}
		checkpoint(cpDetached)
	}
	return p.deleteWhenDetached(ctx, eniID)
}

// markDeleting records that the pass lets eniID go, whether or not the
// detach and delete then succeed: a failed one is repaired from its intent.
func (p *pass) markDeleting(eniID string) {
	if p.deleting == nil {
		p.deleting = map[string]bool{}
	}
	p.deleting[eniID] = true
}

func (p *pass) deleteWhenDetached(ctx context.Context, eniID string) error {
	wait := 100 * time.Millisecond
	for attempt := 0; ; attempt++ {
		p.rep.Calls = append(p.rep.Calls, "DeleteNetworkInterface")
		err := p.Cloud.DeleteENI(ctx, eniID)
		if err == nil || cloud.Classify(err) == cloud.KindNotFound {
			return nil
		}
		if !cloud.IsKind(err, cloud.KindInUse) || attempt >= 8 {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

func findENI(truth []cloud.ENIInfo, id string) (cloud.ENIInfo, bool) {
	for _, t := range truth {
		if t.ID == id {
			return t, t.Attached
		}
	}
	return cloud.ENIInfo{}, false
}
