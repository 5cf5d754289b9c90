package ec2sim

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// An authorized dry run answers DryRunOperation (HTTP 412) and changes
// nothing; a denied action answers UnauthorizedOperation (HTTP 403) to a dry
// run too; the dry runs are counted apart.
func TestDryRunPerAction(t *testing.T) {
	sim, url := startSim(t, Config{})
	c := ec2Client(t, url, false)
	calls := dryRunCalls(sim)
	before := sim.State()
	for _, action := range slices.Sorted(maps.Keys(calls)) {
		wantCode(t, calls[action](ctx, c), "DryRunOperation", 412)
		sim.DenyAction(action)
		wantCode(t, calls[action](ctx, c), "UnauthorizedOperation", 403)
		sim.AllowAction(action)
	}
	if got := sim.State(); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("dry runs changed the node:\n%+v\n%+v", before, got)
	}
	dry := sim.DryRuns()
	for action := range calls {
		if dry[action] != 1 || sim.Counters()[action] != 2 {
			t.Errorf("%s: %d dry runs counted of %d calls, want 1 of 2", action, dry[action], sim.Counters()[action])
		}
	}
}

// Every action the emulator serves has a dry run above.
func TestDryRunCoversEveryAction(t *testing.T) {
	sim, _ := startSim(t, Config{})
	for action := range actions() {
		if _, ok := dryRunCalls(sim)[action]; !ok && !noDryRun[action] {
			t.Errorf("no dry run for %s", action)
		}
	}
}

// noDryRun: EC2's API has no DryRun member for these (the SDK cannot send one).
var noDryRun = map[string]bool{"AssignPrivateIpAddresses": true, "UnassignPrivateIpAddresses": true,
	"AssignIpv6Addresses": true, "UnassignIpv6Addresses": true}

// A dry run naming a resource that does not exist fails as EC2's does: IAM
// is evaluated against the named resources.
func TestDryRunNamesRealResources(t *testing.T) {
	_, url := startSim(t, Config{})
	c := ec2Client(t, url, false)
	_, err := c.DeleteNetworkInterface(ctx, &ec2.DeleteNetworkInterfaceInput{
		NetworkInterfaceId: aws.String("eni-0000000000000000f"), DryRun: aws.Bool(true)})
	wantCode(t, err, "InvalidNetworkInterfaceID.NotFound", 400)
	_, err = c.DetachNetworkInterface(ctx, &ec2.DetachNetworkInterfaceInput{
		AttachmentId: aws.String("eni-attach-0000000000000000f"), DryRun: aws.Bool(true)})
	wantCode(t, err, "InvalidAttachmentID.NotFound", 400)
	_, err = c.CreateNetworkInterface(ctx, &ec2.CreateNetworkInterfaceInput{
		SubnetId: aws.String("subnet-0000000000000000f"), DryRun: aws.Bool(true)})
	wantCode(t, err, "InvalidSubnetID.NotFound", 400)
}

// The four actions without DryRun are probed with a request EC2 refuses
// without a change (the ENI's own primary address; an address of no
// subnet): the refusal means authorized, UnauthorizedOperation denied.
func TestProbesOfActionsWithoutDryRun(t *testing.T) {
	sim, url := startSim(t, Config{})
	c := ec2Client(t, url, false)
	eni := sim.State().ENIs[0]
	id, ip, v6 := aws.String(eni.ID), []string{eni.PrimaryIP.String()}, []string{"2001:db8::1"}
	probes := map[string]func() error{
		"AssignPrivateIpAddresses": func() error {
			_, err := c.AssignPrivateIpAddresses(ctx, &ec2.AssignPrivateIpAddressesInput{NetworkInterfaceId: id, PrivateIpAddresses: ip})
			return err
		},
		"UnassignPrivateIpAddresses": func() error {
			_, err := c.UnassignPrivateIpAddresses(ctx, &ec2.UnassignPrivateIpAddressesInput{NetworkInterfaceId: id, PrivateIpAddresses: ip})
			return err
		},
		"AssignIpv6Addresses": func() error {
			_, err := c.AssignIpv6Addresses(ctx, &ec2.AssignIpv6AddressesInput{NetworkInterfaceId: id, Ipv6Addresses: v6})
			return err
		},
		"UnassignIpv6Addresses": func() error {
			_, err := c.UnassignIpv6Addresses(ctx, &ec2.UnassignIpv6AddressesInput{NetworkInterfaceId: id, Ipv6Addresses: v6})
			return err
		},
	}
	before := sim.State()
	for action, probe := range probes {
		if code, status := apiErr(t, probe()); status != 400 || code == "UnauthorizedOperation" {
			t.Errorf("%s allowed: %s HTTP %d, want a refusal (400)", action, code, status)
		}
		sim.DenyAction(action)
		wantCode(t, probe(), "UnauthorizedOperation", 403)
		sim.AllowAction(action)
	}
	if got := sim.State(); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("probes changed the node:\n%+v\n%+v", before, got)
	}
}

// dryRunCalls makes one DryRun=true request of every action the emulator
// serves, naming the node's own resources.
func dryRunCalls(sim *Sim) map[string]func(context.Context, *ec2.Client) error {
	st := sim.State()
	eni := st.ENIs[0]
	id, sub, dry := aws.String(eni.ID), aws.String(st.SubnetID), aws.Bool(true)
	return map[string]func(context.Context, *ec2.Client) error{
		"DescribeInstances": func(ctx context.Context, c *ec2.Client) error {
			_, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{st.InstanceID}, DryRun: dry})
			return err
		},
		"DescribeInstanceTypes": func(ctx context.Context, c *ec2.Client) error {
			_, err := c.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{
				InstanceTypes: []types.InstanceType{types.InstanceType(st.InstanceType)}, DryRun: dry})
			return err
		},
		"DescribeNetworkInterfaces": func(ctx context.Context, c *ec2.Client) error {
			_, err := c.DescribeNetworkInterfaces(ctx, &ec2.DescribeNetworkInterfacesInput{NetworkInterfaceIds: []string{eni.ID}, DryRun: dry})
			return err
		},
		"DescribeSubnets": func(ctx context.Context, c *ec2.Client) error {
			_, err := c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: []string{st.SubnetID}, DryRun: dry})
			return err
		},
		"DescribeSecurityGroups": func(ctx context.Context, c *ec2.Client) error {
			_, err := c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: eni.Groups, DryRun: dry})
			return err
		},
		"CreateNetworkInterface": func(ctx context.Context, c *ec2.Client) error {
			_, err := c.CreateNetworkInterface(ctx, &ec2.CreateNetworkInterfaceInput{SubnetId: sub, Groups: eni.Groups, DryRun: dry})
			return err
		},
		"AttachNetworkInterface": func(ctx context.Context, c *ec2.Client) error {
			_, err := c.AttachNetworkInterface(ctx, &ec2.AttachNetworkInterfaceInput{NetworkInterfaceId: id,
				InstanceId: aws.String(st.InstanceID), DeviceIndex: aws.Int32(1), DryRun: dry})
			return err
		},
		"DetachNetworkInterface": func(ctx context.Context, c *ec2.Client) error {
			_, err := c.DetachNetworkInterface(ctx, &ec2.DetachNetworkInterfaceInput{AttachmentId: aws.String(eni.AttachmentID), DryRun: dry})
			return err
		},
		"DeleteNetworkInterface": func(ctx context.Context, c *ec2.Client) error {
			_, err := c.DeleteNetworkInterface(ctx, &ec2.DeleteNetworkInterfaceInput{NetworkInterfaceId: id, DryRun: dry})
			return err
		},
		"ModifyNetworkInterfaceAttribute": func(ctx context.Context, c *ec2.Client) error {
			_, err := c.ModifyNetworkInterfaceAttribute(ctx, &ec2.ModifyNetworkInterfaceAttributeInput{NetworkInterfaceId: id,
				Groups: eni.Groups, DryRun: dry})
			return err
		},
		"CreateTags": func(ctx context.Context, c *ec2.Client) error {
			_, err := c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{eni.ID}, DryRun: dry,
				Tags: []types.Tag{{Key: aws.String("k"), Value: aws.String("v")}}})
			return err
		},
		"DeleteTags": func(ctx context.Context, c *ec2.Client) error {
			_, err := c.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: []string{eni.ID}, DryRun: dry})
			return err
		},
	}
}
