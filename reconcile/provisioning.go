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

// readOnlyPlan drops the plan's EC2 actions when provisioning is off: pods
// use what is attached. The finding says what the pass would have done.
func (p *pass) readOnlyPlan(plan pool.Plan) pool.Plan {
	why := p.cfg.NoProvisioning()
	if why == "" || len(plan.Actions) == 0 {
		return plan
	}
	p.rep.Findings = append(p.rep.Findings, Finding{"provisioning-off", fmt.Sprintf(
		"the pool does not grow or shrink (%s); the plan had %s: %v", why, Plural(len(plan.Actions), "action", "actions"), callsOf(plan.Actions))})
	plan.Actions = nil
	return plan
}

// gate swaps the roles of the pass's Cloud that the mode forbids for
// refusing ones (the Runner keeps its own): a dry run or disabled
// provisioning refuses every EC2 mutation; IMDS-only refuses EC2 reads too.
// IMDS is never refused: it changes nothing and costs no EC2 budget.
func (p *pass) gate() {
	why := p.cfg.NoProvisioning()
	if why == "" && p.opts.DryRun {
		why = "a dry run makes no EC2 call that changes anything"
	}
	if why == "" {
		return
	}
	var reads EC2Reader = p.Cloud
	if p.cfg.IMDSOnly {
		reads = refusingReader{why}
	}
	r := *p.Runner
	r.Cloud = roles{Metadata: p.Cloud, EC2Reader: reads, EC2Writer: refusingWriter{why}}
	p.Runner = &r
}

// roles is a Cloud assembled from one value per role. A method added to
// Cloud outside the roles makes it stop compiling here.
type roles struct {
	Metadata
	EC2Reader
	EC2Writer
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

// refusal is the error of an EC2 call a mode forbids: no request is sent.
func refusal(why, op string) error {
	return &cloud.Error{Op: "ec2:" + op, Kind: cloud.KindOther, Msg: "not called: " + why}
}

// refusingReader answers every EC2 read with a refusal (IMDS-only). It
// embeds nothing, so a read added to EC2Reader must be answered here.
type refusingReader struct{ why string }

var _ EC2Reader = refusingReader{}

func (g refusingReader) Instance(context.Context, string) (cloud.Instance, error) {
	return cloud.Instance{}, refusal(g.why, "DescribeInstances")
}

func (g refusingReader) InstanceLimits(context.Context, string) (pool.Limits, cloud.InstanceTypeInfo, error) {
	return pool.Limits{}, cloud.InstanceTypeInfo{}, refusal(g.why, "DescribeInstanceTypes")
}

func (g refusingReader) InstanceENIs(context.Context, string) ([]cloud.ENIInfo, error) {
	return nil, refusal(g.why, "DescribeNetworkInterfaces")
}

func (g refusingReader) ENIByID(context.Context, string) (cloud.ENIInfo, error) {
	return cloud.ENIInfo{}, refusal(g.why, "DescribeNetworkInterfaces")
}

func (g refusingReader) ZoneSubnets(context.Context, string, string) ([]cloud.Subnet, error) {
	return nil, refusal(g.why, "DescribeSubnets")
}

func (g refusingReader) Subnet(context.Context, string) (cloud.Subnet, error) {
	return cloud.Subnet{}, refusal(g.why, "DescribeSubnets")
}

func (g refusingReader) TaggedGroups(context.Context, string, string, []string) ([]cloud.SecurityGroup, error) {
	return nil, refusal(g.why, "DescribeSecurityGroups")
}

// refusingWriter answers every EC2 mutation with a refusal. It embeds
// nothing, so a mutation added to EC2Writer does not compile until it is
// answered here: the gate fails closed.
type refusingWriter struct{ why string }

var _ EC2Writer = refusingWriter{}

func (g refusingWriter) CreateENI(context.Context, cloud.CreateENIRequest) (cloud.ENIInfo, error) {
	return cloud.ENIInfo{}, refusal(g.why, "CreateNetworkInterface")
}

func (g refusingWriter) AttachENI(context.Context, string, string, int) (string, error) {
	return "", refusal(g.why, "AttachNetworkInterface")
}

func (g refusingWriter) SetDeleteOnTermination(context.Context, string, string) error {
	return refusal(g.why, "ModifyNetworkInterfaceAttribute")
}

func (g refusingWriter) AssignAddresses(context.Context, string, int, bool) ([]netip.Prefix, error) {
	return nil, refusal(g.why, "AssignPrivateIpAddresses")
}

func (g refusingWriter) UnassignAddresses(context.Context, string, []netip.Prefix) error {
	return refusal(g.why, "UnassignPrivateIpAddresses")
}

func (g refusingWriter) DetachENI(context.Context, string, bool) error {
	return refusal(g.why, "DetachNetworkInterface")
}

func (g refusingWriter) DeleteENI(context.Context, string) error {
	return refusal(g.why, "DeleteNetworkInterface")
}

func (g refusingWriter) LeakedENIs(context.Context, string, string, time.Duration, time.Time) ([]cloud.ENIInfo, error) {
	return nil, refusal(g.why, "DescribeNetworkInterfaces")
}

func (g refusingWriter) SetENIGroups(context.Context, string, []string) error {
	return refusal(g.why, "ModifyNetworkInterfaceAttribute")
}

func (g refusingWriter) TagENI(context.Context, string, map[string]string) error {
	return refusal(g.why, "CreateTags")
}

func (g refusingWriter) AssignIPv6Prefix(context.Context, string) (netip.Prefix, error) {
	return netip.Prefix{}, refusal(g.why, "AssignIpv6Addresses")
}

func (g refusingWriter) UnassignIPv6(context.Context, string, []netip.Addr, []netip.Prefix) error {
	return refusal(g.why, "UnassignIpv6Addresses")
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
	truth := imdsTruth(view)
	p.imdsPools = p.imdsProfiles(ctx, truth)
	return truth, nil
}
