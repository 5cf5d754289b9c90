package cloud

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// DryRunTarget is what an authorization check names: the node's own
// resources, since EC2 evaluates IAM against the resources a request names
// (an unknown ID fails as NotFound, not as a verdict).
type DryRunTarget struct {
	InstanceID, InstanceType, ENIID, SubnetID string
	AttachmentID                              string // the ENI's; "": DetachNetworkInterface cannot be checked
	Groups                                    []string
	PrimaryIP                                 netip.Addr
	DeviceIndex                               int  // a free device index, for the attach
	Prefixes                                  bool // ask for a /28, as prefix delegation does
	Tags                                      map[string]string
}

// probeV6 belongs to no VPC (the documentation range): assigning or
// unassigning it is refused whoever asks.
const probeV6 = "2001:db8::1"

type dryRunFunc func(context.Context, ec2Handle, DryRunTarget) error

// Probed reports whether EC2's API has no DryRun for the action, so the
// check sends a request EC2 refuses without a change instead: assign or
// unassign the ENI's own primary address, or an IPv6 address of no subnet.
// The refusal comes after IAM's verdict: UnauthorizedOperation still means
// denied, any other refusal allowed.
func Probed(action string) bool {
	switch action {
	case "AssignPrivateIpAddresses", "UnassignPrivateIpAddresses", "AssignIpv6Addresses", "UnassignIpv6Addresses":
		return true
	}
	return false
}

// DryRun asks EC2 whether the caller may call action on t's resources,
// changing nothing: nil when EC2 answers DryRunOperation (or, for a Probed
// action, refuses the probe for another reason), a KindUnauthorized *Error
// when IAM denies it, any other error when EC2 gave no verdict.
func (c *Client) DryRun(ctx context.Context, action string, t DryRunTarget) error {
	run := dryRunOf(action)
	if run == nil {
		return fmt.Errorf("ec2:%s: no authorization check for this action", action)
	}
	if action == "DetachNetworkInterface" && t.AttachmentID == "" {
		return fmt.Errorf("ec2:%s: no attachment ID of the node to check with (ec2:DescribeNetworkInterfaces gives it)", action)
	}
	t.Tags = c.ownerTags(t.InstanceID, c.now(), t.Tags)
	_, err := call(ctx, c, action, func(h ec2Handle) (struct{}, error) { return struct{}{}, run(ctx, h, t) })
	return verdict(action, err)
}

func verdict(action string, err error) error {
	var ce *Error
	if err == nil || !errors.As(err, &ce) {
		return err
	}
	switch {
	case ce.Code == "DryRunOperation":
		return nil
	case ce.Kind == KindUnauthorized:
		return err
	case Probed(action) && ce.Code != "" && httpStatus(err) == 400 && !isThrottleCode(ce.Code):
		return nil // the probe refused on its content, past IAM
	}
	return err
}

func dryRunOf(action string) dryRunFunc {
	if f := dryRunRead(action); f != nil {
		return f
	}
	if f := dryRunENI(action); f != nil {
		return f
	}
	return probeOf(action)
}

func dryRunRead(action string) dryRunFunc {
	dry := aws.Bool(true)
	switch action {
	case "DescribeInstances":
		return func(ctx context.Context, h ec2Handle, t DryRunTarget) error {
			_, err := h.client().DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{t.InstanceID}, DryRun: dry})
			return err
		}
	case "DescribeInstanceTypes":
		return func(ctx context.Context, h ec2Handle, t DryRunTarget) error {
			_, err := h.client().DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{
				InstanceTypes: []types.InstanceType{types.InstanceType(t.InstanceType)}, DryRun: dry})
			return err
		}
	case "DescribeNetworkInterfaces":
		return func(ctx context.Context, h ec2Handle, t DryRunTarget) error {
			_, err := h.client().DescribeNetworkInterfaces(ctx, &ec2.DescribeNetworkInterfacesInput{NetworkInterfaceIds: []string{t.ENIID}, DryRun: dry})
			return err
		}
	case "DescribeSubnets":
		return func(ctx context.Context, h ec2Handle, t DryRunTarget) error {
			_, err := h.client().DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: []string{t.SubnetID}, DryRun: dry})
			return err
		}
	case "DescribeSecurityGroups":
		return func(ctx context.Context, h ec2Handle, t DryRunTarget) error {
			_, err := h.client().DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: t.Groups, DryRun: dry})
			return err
		}
	}
	return nil
}

func dryRunENI(action string) dryRunFunc {
	dry := aws.Bool(true)
	switch action {
	case "CreateNetworkInterface":
		return func(ctx context.Context, h ec2Handle, t DryRunTarget) error {
			in := &ec2.CreateNetworkInterfaceInput{SubnetId: aws.String(t.SubnetID), Groups: t.Groups, DryRun: dry,
				Description:                    aws.String(DescriptionPrefix + t.InstanceID),
				SecondaryPrivateIpAddressCount: aws.Int32(1),
				TagSpecifications:              []types.TagSpecification{{ResourceType: types.ResourceTypeNetworkInterface, Tags: ec2Tags(t.Tags)}}}
			if t.Prefixes {
				in.SecondaryPrivateIpAddressCount, in.Ipv4PrefixCount = nil, aws.Int32(1)
			}
			_, err := h.client().CreateNetworkInterface(ctx, in)
			return err
		}
	case "AttachNetworkInterface":
		return func(ctx context.Context, h ec2Handle, t DryRunTarget) error {
			_, err := h.client().AttachNetworkInterface(ctx, &ec2.AttachNetworkInterfaceInput{NetworkInterfaceId: aws.String(t.ENIID),
				InstanceId: aws.String(t.InstanceID), DeviceIndex: aws.Int32(int32(t.DeviceIndex)), DryRun: dry})
			return err
		}
	case "DetachNetworkInterface":
		return func(ctx context.Context, h ec2Handle, t DryRunTarget) error {
			_, err := h.client().DetachNetworkInterface(ctx, &ec2.DetachNetworkInterfaceInput{AttachmentId: aws.String(t.AttachmentID), DryRun: dry})
			return err
		}
	case "DeleteNetworkInterface":
		return func(ctx context.Context, h ec2Handle, t DryRunTarget) error {
			_, err := h.client().DeleteNetworkInterface(ctx, &ec2.DeleteNetworkInterfaceInput{NetworkInterfaceId: aws.String(t.ENIID), DryRun: dry})
			return err
		}
	case "ModifyNetworkInterfaceAttribute":
		return func(ctx context.Context, h ec2Handle, t DryRunTarget) error {
			_, err := h.client().ModifyNetworkInterfaceAttribute(ctx, &ec2.ModifyNetworkInterfaceAttributeInput{
				NetworkInterfaceId: aws.String(t.ENIID), Groups: t.Groups, DryRun: dry})
			return err
		}
	case "CreateTags":
		return func(ctx context.Context, h ec2Handle, t DryRunTarget) error {
			_, err := h.client().CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{t.ENIID}, Tags: ec2Tags(t.Tags), DryRun: dry})
			return err
		}
	}
	return nil
}

// probeOf is the no-change request of a Probed action.
func probeOf(action string) dryRunFunc {
	switch action {
	case "AssignPrivateIpAddresses":
		return func(ctx context.Context, h ec2Handle, t DryRunTarget) error {
			_, err := h.client().AssignPrivateIpAddresses(ctx, &ec2.AssignPrivateIpAddressesInput{
				NetworkInterfaceId: aws.String(t.ENIID), PrivateIpAddresses: []string{t.PrimaryIP.String()}})
			return err
		}
	case "UnassignPrivateIpAddresses":
		return func(ctx context.Context, h ec2Handle, t DryRunTarget) error {
			_, err := h.client().UnassignPrivateIpAddresses(ctx, &ec2.UnassignPrivateIpAddressesInput{
				NetworkInterfaceId: aws.String(t.ENIID), PrivateIpAddresses: []string{t.PrimaryIP.String()}})
			return err
		}
	case "AssignIpv6Addresses":
		return func(ctx context.Context, h ec2Handle, t DryRunTarget) error {
			_, err := h.client().AssignIpv6Addresses(ctx, &ec2.AssignIpv6AddressesInput{
				NetworkInterfaceId: aws.String(t.ENIID), Ipv6Addresses: []string{probeV6}})
			return err
		}
	case "UnassignIpv6Addresses":
		return func(ctx context.Context, h ec2Handle, t DryRunTarget) error {
			_, err := h.client().UnassignIpv6Addresses(ctx, &ec2.UnassignIpv6AddressesInput{
				NetworkInterfaceId: aws.String(t.ENIID), Ipv6Addresses: []string{probeV6}})
			return err
		}
	}
	return nil
}
