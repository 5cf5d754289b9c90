package cloud

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"vpc-cni/pool"
)

// InstanceTypeInfo is the networking part of DescribeInstanceTypes.
type InstanceTypeInfo struct {
	InstanceType     string
	MaxENIs          int // all network cards
	MaxENIsCard0     int // the card this project attaches to; equals MaxENIs on single-card types
	IPv4PerENI       int // the primary address included
	NetworkCards     int
	Hypervisor       string
	BareMetal        bool
	PrefixDelegation bool // PrefixCapable(Hypervisor)
	VCPUs            int  // DefaultVCpus; 0 when EC2 (or the built-in table) does not say
}

// InstanceLimits reads the instance type's networking limits. They never
// change for an instance, so callers fetch them once and store them.
func (c *Client) InstanceLimits(ctx context.Context, instanceType string) (pool.Limits, InstanceTypeInfo, error) {
	const action = "DescribeInstanceTypes"
	out, err := call(ctx, c, action, func(h ec2Handle) (*ec2.DescribeInstanceTypesOutput, error) {
		return h.client().DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{
			InstanceTypes: []types.InstanceType{types.InstanceType(instanceType)},
		})
	})
	if err != nil {
		return pool.Limits{}, InstanceTypeInfo{}, err
	}
	if len(out.InstanceTypes) == 0 || out.InstanceTypes[0].NetworkInfo == nil {
		return pool.Limits{}, InstanceTypeInfo{}, &Error{Op: "ec2:" + action, Kind: KindNotFound,
			Msg: fmt.Sprintf("EC2 does not know instance type %q", instanceType)}
	}
	info := typeInfo(out.InstanceTypes[0])
	lim := pool.Limits{MaxENIs: info.MaxENIsCard0, IPv4PerENI: info.IPv4PerENI, VCPUs: info.VCPUs}
	if err := lim.Validate(); err != nil {
		return pool.Limits{}, info, &Error{Op: "ec2:" + action, Kind: KindOther,
			Msg: fmt.Sprintf("instance type %q has no usable ENI limits: %v", instanceType, err)}
	}
	return lim, info, nil
}

func typeInfo(t types.InstanceTypeInfo) InstanceTypeInfo {
	n := t.NetworkInfo
	info := InstanceTypeInfo{
		InstanceType: string(t.InstanceType),
		MaxENIs:      int(aws.ToInt32(n.MaximumNetworkInterfaces)),
		IPv4PerENI:   int(aws.ToInt32(n.Ipv4AddressesPerInterface)),
		NetworkCards: max(1, int(aws.ToInt32(n.MaximumNetworkCards))),
		Hypervisor:   string(t.Hypervisor),
		BareMetal:    aws.ToBool(t.BareMetal),
	}
	if t.VCpuInfo != nil {
		info.VCPUs = int(aws.ToInt32(t.VCpuInfo.DefaultVCpus))
	}
	info.MaxENIsCard0 = info.MaxENIs
	for _, card := range n.NetworkCards {
		if aws.ToInt32(card.NetworkCardIndex) == 0 && card.MaximumNetworkInterfaces != nil {
			info.MaxENIsCard0 = min(info.MaxENIs, int(*card.MaximumNetworkInterfaces))
		}
	}
	info.PrefixDelegation = PrefixCapable(info.Hypervisor)
	return info
}

// PrefixCapable says whether an instance of this hypervisor can hold /28
// prefixes: Nitro can, and so can bare metal, whose hypervisor EC2 leaves
// empty; Xen cannot. The reference decides the same way.
func PrefixCapable(hypervisor string) bool {
	return hypervisor == string(types.InstanceTypeHypervisorNitro) || hypervisor == ""
}

// Subnet is what DescribeSubnets says about one subnet.
type Subnet struct {
	ID, VPCID, AZ string
	CIDR          netip.Prefix
	Available     int // AvailableIpAddressCount
	Tags          map[string]string
	IPv6CIDRs     []netip.Prefix // the associated IPv6 /64 (EC2 allows one); empty: IPv4-only subnet
}

// Subnet describes one subnet (its CIDR and free address count).
func (c *Client) Subnet(ctx context.Context, subnetID string) (Subnet, error) {
	const action = "DescribeSubnets"
	out, err := call(ctx, c, action, func(h ec2Handle) (*ec2.DescribeSubnetsOutput, error) {
		return h.client().DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: []string{subnetID}})
	})
	if err != nil {
		return Subnet{}, err
	}
	if len(out.Subnets) == 0 {
		return Subnet{}, &Error{Op: "ec2:" + action, Kind: KindNotFound, Msg: fmt.Sprintf("subnet %s not found", subnetID)}
	}
	s := out.Subnets[0]
	cidr, err := netip.ParsePrefix(aws.ToString(s.CidrBlock))
	if err != nil {
		return Subnet{}, ec2Error(action, "", fmt.Errorf("subnet %s: bad CIDR: %w", subnetID, err))
	}
	return Subnet{
		ID: aws.ToString(s.SubnetId), VPCID: aws.ToString(s.VpcId), AZ: aws.ToString(s.AvailabilityZone),
		CIDR: cidr, Available: int(aws.ToInt32(s.AvailableIpAddressCount)), Tags: tagMap(s.Tags),
		IPv6CIDRs: subnetIPv6(s),
	}, nil
}
