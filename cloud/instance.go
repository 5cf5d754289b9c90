package cloud

import (
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

type ec2Instance = types.Instance

// Instance is the node as DescribeInstances shows it.
type Instance struct {
	ID, Type, AZ, SubnetID, VPCID string
	DeviceIndexes                 []int // in use on network card 0, ascending
}

// Instance reads one instance. Reconcile uses it once, to check what IMDS
// said about the node against EC2 before trusting it for good.
func (c *Client) Instance(ctx context.Context, id string) (Instance, error) {
	const action = "DescribeInstances"
	out, err := call(ctx, c, action, func(h ec2Handle) (*ec2.DescribeInstancesOutput, error) {
		return h.client().DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	})
	if err != nil {
		return Instance{}, err
	}
	for _, r := range out.Reservations {
		for _, in := range r.Instances {
			if aws.ToString(in.InstanceId) == id {
				return instanceOf(in), nil
			}
		}
	}
	return Instance{}, &Error{Op: "ec2:" + action, Kind: KindNotFound, Msg: fmt.Sprintf("EC2 does not know instance %s", id)}
}

func instanceOf(in ec2Instance) Instance {
	out := Instance{ID: aws.ToString(in.InstanceId), Type: string(in.InstanceType),
		SubnetID: aws.ToString(in.SubnetId), VPCID: aws.ToString(in.VpcId)}
	if in.Placement != nil {
		out.AZ = aws.ToString(in.Placement.AvailabilityZone)
	}
	for _, ni := range in.NetworkInterfaces {
		if a := ni.Attachment; a != nil && aws.ToInt32(a.NetworkCardIndex) == 0 {
			out.DeviceIndexes = append(out.DeviceIndexes, int(aws.ToInt32(a.DeviceIndex)))
		}
	}
	slices.Sort(out.DeviceIndexes)
	return out
}
