package cloud

import (
	"context"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// ENIGroups reads the security group IDs of the ENI with this MAC from IMDS:
// one read, cheap enough for every pass, so that a change to the primary
// ENI's groups is noticed without asking EC2.
func (c *Client) ENIGroups(ctx context.Context, mac string) ([]string, error) {
	r, err := c.reader(ctx)
	if err != nil {
		return nil, err
	}
	groups := r.lines("network/interfaces/macs/" + mac + "/security-group-ids")
	return groups, r.err
}

// SetENIGroups replaces the ENI's security groups with groups (one
// ModifyNetworkInterfaceAttribute). Idempotent: setting the groups an ENI
// already has changes nothing.
func (c *Client) SetENIGroups(ctx context.Context, eniID string, groups []string) error {
	_, err := call(ctx, c, "ModifyNetworkInterfaceAttribute", func(h ec2Handle) (*ec2.ModifyNetworkInterfaceAttributeOutput, error) {
		return h.client().ModifyNetworkInterfaceAttribute(ctx, &ec2.ModifyNetworkInterfaceAttributeInput{
			NetworkInterfaceId: aws.String(eniID), Groups: groups,
		})
	})
	return err
}

// SecurityGroup is what DescribeSecurityGroups says about one group.
type SecurityGroup struct {
	ID, Name, VPCID string
	Tags            map[string]string
}

// TaggedGroups lists the security groups of the VPC that carry the tag key
// with one of values (DescribeSecurityGroups filtered by vpc-id and
// tag:<key>, paged by hand as describeENIs is), sorted by ID. An empty list
// is not an error.
func (c *Client) TaggedGroups(ctx context.Context, vpcID, key string, values []string) ([]SecurityGroup, error) {
	const action = "DescribeSecurityGroups"
	filters := []types.Filter{filter("vpc-id", vpcID), filter("tag:"+key, values...)}
	var out []SecurityGroup
	var token *string
	for {
		page, err := call(ctx, c, action, func(h ec2Handle) (*ec2.DescribeSecurityGroupsOutput, error) {
			return h.client().DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{
				Filters: filters, MaxResults: aws.Int32(c.opts.PageSize), NextToken: token,
			})
		})
		if err != nil {
			return nil, err
		}
		for _, g := range page.SecurityGroups {
			out = append(out, SecurityGroup{ID: aws.ToString(g.GroupId), Name: aws.ToString(g.GroupName),
				VPCID: aws.ToString(g.VpcId), Tags: tagMap(g.Tags)})
		}
		if aws.ToString(page.NextToken) == "" || aws.ToString(page.NextToken) == aws.ToString(token) {
			slices.SortFunc(out, func(a, b SecurityGroup) int { return strings.Compare(a.ID, b.ID) })
			return out, nil
		}
		token = page.NextToken
	}
}
