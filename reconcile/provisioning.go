package reconcile

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"vpc-cni/cloud"
	"vpc-cni/pool"
	"vpc-cni/settings"
)

// DISABLE_NETWORK_RESOURCE_PROVISIONING and ENABLE_IMDS_ONLY_MODE: the pass
// itself plans no EC2 mutation (and, IMDS-only, reads IMDS alone), and the
// Cloud it uses refuses what the mode forbids, so a path overlooked here
// fails loudly instead of calling EC2.

// NoProvisioning names the knob that keeps the pool from growing, or "".
func NoProvisioning(cfg settings.Effective) string {
	switch {
	case cfg.IMDSOnly:
		return settings.IMDSOnlyMode + "=true: vpc-cni makes no EC2 call"
	case cfg.DisableProvisioning:
		return settings.DisableProvisioning + "=true: vpc-cni makes no EC2 call that changes anything"
	}
	return ""
}

// readOnlyPlan drops the plan's EC2 actions when provisioning is off: pods
// use what is attached. The finding says what the pass would have done.
func (p *pass) readOnlyPlan(plan pool.Plan) pool.Plan {
	why := NoProvisioning(p.cfg)
	if why == "" || len(plan.Actions) == 0 {
		return plan
	}
	p.rep.Findings = append(p.rep.Findings, Finding{"provisioning-off", fmt.Sprintf(
		"the pool does not grow or shrink (%s); the plan had %s: %v", why, Plural(len(plan.Actions), "action", "actions"), callsOf(plan.Actions))})
	plan.Actions = nil
	return plan
}

// gate wraps the pass's Cloud as the mode requires (the Runner keeps its own).
func (p *pass) gate() {
	if why := NoProvisioning(p.cfg); why != "" {
		r := *p.Runner
		r.Cloud = gatedCloud{Cloud: r.Cloud, why: why, reads: !p.cfg.IMDSOnly}
		p.Runner = &r
	}
}

// learnFromIMDS is the node learnt without EC2 (IMDS-only): identity from
// IMDS, not confirmed by DescribeInstances, and limits from the built-in
// instance-type table.
func (p *pass) learnFromIMDS(ctx context.Context, id cloud.Identity) (pool.Limits, cloud.InstanceTypeInfo, error) {
	if id.SubnetID == "" || id.VPCID == "" || id.AZ == "" || !id.SubnetCIDR.IsValid() {
		return pool.Limits{}, cloud.InstanceTypeInfo{}, fmt.Errorf("%s: IMDS lacks the subnet, VPC or zone of %s", settings.IMDSOnlyMode, id.InstanceID)
	}
	lim, info, err := cloud.BuiltinLimits(id.InstanceType)
	if err != nil {
		return lim, info, fmt.Errorf("%s: %w", settings.IMDSOnlyMode, err)
	}
	return lim, info, nil
}

// gatedCloud refuses the EC2 calls the mode forbids: every one (IMDS-only),
// or the mutating ones (reads true). IMDS reads pass through (Identity,
// AttachedInterfaces, VPCCIDRs, ENIGroups), and so would an EC2 method added
// to Cloud without one here: add it here too.
type gatedCloud struct {
	Cloud
	why   string
	reads bool
}

func (g gatedCloud) refuse(op string) error {
	return &cloud.Error{Op: "ec2:" + op, Kind: cloud.KindOther, Msg: "not called: " + g.why}
}

func (g gatedCloud) read(op string) error {
	if g.reads {
		return nil
	}
	return g.refuse(op)
}

func (g gatedCloud) Instance(ctx context.Context, id string) (cloud.Instance, error) {
	if err := g.read("DescribeInstances"); err != nil {
		return cloud.Instance{}, err
	}
	return g.Cloud.Instance(ctx, id)
}

func (g gatedCloud) InstanceLimits(ctx context.Context, t string) (pool.Limits, cloud.InstanceTypeInfo, error) {
	if err := g.read("DescribeInstanceTypes"); err != nil {
		return pool.Limits{}, cloud.InstanceTypeInfo{}, err
	}
	return g.Cloud.InstanceLimits(ctx, t)
}

func (g gatedCloud) InstanceENIs(ctx context.Context, id string) ([]cloud.ENIInfo, error) {
	if err := g.read("DescribeNetworkInterfaces"); err != nil {
		return nil, err
	}
	return g.Cloud.InstanceENIs(ctx, id)
}

func (g gatedCloud) ENIByID(ctx context.Context, id string) (cloud.ENIInfo, error) {
	if err := g.read("DescribeNetworkInterfaces"); err != nil {
		return cloud.ENIInfo{}, err
	}
	return g.Cloud.ENIByID(ctx, id)
}

func (g gatedCloud) ZoneSubnets(ctx context.Context, vpcID, az string) ([]cloud.Subnet, error) {
	if err := g.read("DescribeSubnets"); err != nil {
		return nil, err
	}
	return g.Cloud.ZoneSubnets(ctx, vpcID, az)
}

func (g gatedCloud) Subnet(ctx context.Context, id string) (cloud.Subnet, error) {
	if err := g.read("DescribeSubnets"); err != nil {
		return cloud.Subnet{}, err
	}
	return g.Cloud.Subnet(ctx, id)
}

func (g gatedCloud) CreateENI(context.Context, cloud.CreateENIRequest) (cloud.ENIInfo, error) {
	return cloud.ENIInfo{}, g.refuse("CreateNetworkInterface")
}

func (g gatedCloud) AttachENI(context.Context, string, string, int) (string, error) {
	return "", g.refuse("AttachNetworkInterface")
}

func (g gatedCloud) SetDeleteOnTermination(context.Context, string, string) error {
	return g.refuse("ModifyNetworkInterfaceAttribute")
}

func (g gatedCloud) AssignAddresses(context.Context, string, int, bool) ([]netip.Prefix, error) {
	return nil, g.refuse("AssignPrivateIpAddresses")
}

func (g gatedCloud) UnassignAddresses(context.Context, string, []netip.Prefix) error {
	return g.refuse("UnassignPrivateIpAddresses")
}

func (g gatedCloud) DetachENI(context.Context, string, bool) error {
	return g.refuse("DetachNetworkInterface")
}

func (g gatedCloud) DeleteENI(context.Context, string) error {
	return g.refuse("DeleteNetworkInterface")
}

// LeakedENIs may tag (CreateTags): a mutation.
func (g gatedCloud) LeakedENIs(context.Context, string, string, time.Duration, time.Time) ([]cloud.ENIInfo, error) {
	return nil, g.refuse("DescribeNetworkInterfaces")
}

func (g gatedCloud) TagENI(context.Context, string, map[string]string) error {
	return g.refuse("CreateTags")
}

func (g gatedCloud) SetENIGroups(context.Context, string, []string) error {
	return g.refuse("ModifyNetworkInterfaceAttribute")
}

// observeIMDSOnly is IMDS-only mode's read: IMDS's view is the truth, even
// where it disagrees with the store (it lags EC2 after a change; nothing
// here changes EC2).
func (p *pass) observeIMDSOnly(ctx context.Context) ([]cloud.ENIInfo, error) {
	view, err := p.Cloud.AttachedInterfaces(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the node's ENIs from IMDS (%s=true: EC2 is never asked): %w", settings.IMDSOnlyMode, err)
	}
	p.rep.Observed = FromIMDS
	return imdsTruth(view), nil
}
