package cloud

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// CNISubnetTag marks a subnet that new ENIs may use besides the node's own
// (the reference's subnet discovery).
const CNISubnetTag = "kubernetes.io/role/cni"

// ClusterSubnetTagPrefix starts the tag that gives a subnet to one cluster
// (cni.networking.k8s.aws/cluster/<CLUSTER_NAME>) for subnet discovery.
const ClusterSubnetTagPrefix = "cni.networking.k8s.aws/cluster/"

// ForCluster keeps the subnets subnet discovery may use for cluster, by the
// reference's rule: with CLUSTER_NAME set, a subnet other than the node's own
// that carries cluster tags must carry this cluster's (any value); one with
// none is shared by every cluster. Without a cluster name nothing is dropped.
// (kubernetes.io/cluster/<name>, the load balancers' tag, plays no part.)
func ForCluster(subnets []Subnet, own, cluster string) []Subnet {
	if cluster == "" {
		return subnets
	}
	return slices.DeleteFunc(slices.Clone(subnets), func(s Subnet) bool {
		if s.ID == own {
			return false
		}
		if _, ok := s.Tags[ClusterSubnetTagPrefix+cluster]; ok {
			return false
		}
		for k := range s.Tags {
			if strings.HasPrefix(k, ClusterSubnetTagPrefix) {
				return true // another cluster's
			}
		}
		return false
	})
}

// CNISubnets lists the subnets of the VPC in the zone tagged CNISubnetTag=1,
// the one with the most free addresses first (ties by ID, so the choice is
// stable). One DescribeSubnets call; an empty list is not an error.
func (c *Client) CNISubnets(ctx context.Context, vpcID, az string) ([]Subnet, error) {
	return c.subnets(ctx, filter("vpc-id", vpcID), filter("availability-zone", az), filter("tag:"+CNISubnetTag, "1"))
}

// ZoneSubnets lists every subnet of the VPC in the zone with its tags, the
// one with the most free addresses first (ties by ID). One DescribeSubnets
// call; subnet discovery chooses among them.
func (c *Client) ZoneSubnets(ctx context.Context, vpcID, az string) ([]Subnet, error) {
	return c.subnets(ctx, filter("vpc-id", vpcID), filter("availability-zone", az))
}

func (c *Client) subnets(ctx context.Context, filters ...types.Filter) ([]Subnet, error) {
	const action = "DescribeSubnets"
	out, err := call(ctx, c, action, func(h ec2Handle) (*ec2.DescribeSubnetsOutput, error) {
		return h.client().DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: filters})
	})
	if err != nil {
		return nil, err
	}
	subnets := make([]Subnet, 0, len(out.Subnets))
	for _, s := range out.Subnets {
		cidr, err := netip.ParsePrefix(aws.ToString(s.CidrBlock))
		if err != nil {
			return nil, ec2Error(action, "", fmt.Errorf("subnet %s: bad CIDR: %w", aws.ToString(s.SubnetId), err))
		}
		subnets = append(subnets, Subnet{
			ID: aws.ToString(s.SubnetId), VPCID: aws.ToString(s.VpcId), AZ: aws.ToString(s.AvailabilityZone),
			CIDR: cidr, Available: int(aws.ToInt32(s.AvailableIpAddressCount)), Tags: tagMap(s.Tags),
			IPv6CIDRs: subnetIPv6(s),
		})
	}
	slices.SortFunc(subnets, func(a, b Subnet) int { return cmp.Or(b.Available-a.Available, cmp.Compare(a.ID, b.ID)) })
	return subnets, nil
}
