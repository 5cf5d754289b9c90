package ec2sim

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// BenchmarkDescribeNetworkInterfaces: one SDK round trip of the reconcile's
// cloud read (filtered by instance, 3 ENIs with 9 addresses each).
func BenchmarkDescribeNetworkInterfaces(b *testing.B) {
	sim, url := startSim(b, Config{InstanceType: "m5.large"})
	c := ec2Client(b, url, false)
	for i := int32(1); i <= 2; i++ {
		eni := createENI(b, c, sim, &ec2.CreateNetworkInterfaceInput{SecondaryPrivateIpAddressCount: aws.Int32(9)})
		attachENI(b, c, sim, aws.ToString(eni.NetworkInterfaceId), i)
	}
	in := &ec2.DescribeNetworkInterfacesInput{Filters: []types.Filter{
		{Name: aws.String("attachment.instance-id"), Values: []string{sim.State().InstanceID}}}}
	for b.Loop() {
		if _, err := c.DescribeNetworkInterfaces(ctx, in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAssignUnassign: two mutating SDK round trips per iteration.
func BenchmarkAssignUnassign(b *testing.B) {
	sim, url := startSim(b, Config{InstanceType: "m5.large"})
	c := ec2Client(b, url, false)
	id := createENI(b, c, sim, &ec2.CreateNetworkInterfaceInput{}).NetworkInterfaceId
	for b.Loop() {
		out, err := c.AssignPrivateIpAddresses(ctx, &ec2.AssignPrivateIpAddressesInput{NetworkInterfaceId: id,
			SecondaryPrivateIpAddressCount: aws.Int32(4)})
		if err != nil {
			b.Fatal(err)
		}
		var ips []string
		for _, a := range out.AssignedPrivateIpAddresses {
			ips = append(ips, aws.ToString(a.PrivateIpAddress))
		}
		if _, err := c.UnassignPrivateIpAddresses(ctx, &ec2.UnassignPrivateIpAddressesInput{NetworkInterfaceId: id,
			PrivateIpAddresses: ips}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIMDSGet: one IMDS read with a cached token.
func BenchmarkIMDSGet(b *testing.B) {
	_, url := startSim(b, Config{})
	c := imdsClient(url)
	for b.Loop() {
		out, err := c.GetMetadata(ctx, &imds.GetMetadataInput{Path: "network/interfaces/macs/"})
		if err != nil {
			b.Fatal(err)
		}
		out.Content.Close()
	}
}
