package reconcile

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"vpc-cni/cloud"
	"vpc-cni/pool"
	"vpc-cni/store"
)

// learnNode reads identity from IMDS and limits from DescribeInstanceTypes,
// once: they never change for an instance.
func (p *pass) learnNode(ctx context.Context) (store.Node, error) {
	id, err := p.Cloud.Identity(ctx)
	if err != nil {
		return store.Node{}, fmt.Errorf("learning the node from IMDS: %w", err)
	}
	limits, info, err := p.learnLimits(ctx, &id)
	if err != nil {
		return store.Node{}, err
	}
	node := nodeFrom(id, limits, info, p.now())
	node.ConfirmedBoot = BootID() // IMDS has just said who this is
	if p.opts.DryRun {
		return node, nil
	}
	return node, p.update(func(tx *store.Tx) error { return tx.PutNode(node) })
}

// learnLimits confirms the identity with EC2 and reads the type's limits
// there, or, IMDS-only, from the built-in table.
func (p *pass) learnLimits(ctx context.Context, id *cloud.Identity) (pool.Limits, cloud.InstanceTypeInfo, error) {
	if p.cfg.IMDSOnly {
		return p.learnFromIMDS(ctx, *id)
	}
	if err := p.confirmIdentity(ctx, id); err != nil {
		return pool.Limits{}, cloud.InstanceTypeInfo{}, err
	}
	p.rep.Calls = append(p.rep.Calls, "DescribeInstanceTypes")
	limits, info, err := p.Cloud.InstanceLimits(ctx, id.InstanceType)
	if err != nil {
		err = fmt.Errorf("learning the limits of %s: %w", id.InstanceType, err)
	}
	return limits, info, err
}

// confirmIdentity checks what IMDS said against DescribeInstances before it
// is stored for good, and fills what IMDS left out.
func (p *pass) confirmIdentity(ctx context.Context, id *cloud.Identity) error {
	p.rep.Calls = append(p.rep.Calls, "DescribeInstances")
	in, err := p.Cloud.Instance(ctx, id.InstanceID)
	if err != nil {
		return fmt.Errorf("confirming instance %s with EC2: %w", id.InstanceID, err)
	}
	if in.Type != id.InstanceType {
		return fmt.Errorf("IMDS says instance %s is a %s but EC2 says %s; is AWS_EC2_METADATA_SERVICE_ENDPOINT pointing at another node?",
			id.InstanceID, id.InstanceType, in.Type)
	}
	id.SubnetID = cmp.Or(id.SubnetID, in.SubnetID)
	id.VPCID = cmp.Or(id.VPCID, in.VPCID)
	id.AZ = cmp.Or(id.AZ, in.AZ)
	return nil
}

// nodeFrom is what the store keeps of the node: what never changes for it.
func nodeFrom(id cloud.Identity, limits pool.Limits, info cloud.InstanceTypeInfo, now time.Time) store.Node {
	return store.Node{
		InstanceID: id.InstanceID, InstanceType: id.InstanceType, Region: id.Region, AZ: id.AZ,
		VPCID: id.VPCID, VPCCIDRs: id.VPCCIDRs, SubnetID: id.SubnetID, SubnetCIDR: id.SubnetCIDR,
		PrimaryENI: id.PrimaryENI, PrimaryMAC: id.PrimaryMAC, PrimaryIP: id.PrimaryIP,
		SecurityGroups: id.SecurityGroups, Limits: limits, Hypervisor: info.Hypervisor, LearnedAt: now,
		PrefixCapable: cloud.PrefixCapable(info.Hypervisor),
	}
}
