package cloud

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
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
