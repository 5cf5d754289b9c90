package ec2sim

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

func TestENICallsCountEveryCallNamingTheENI(t *testing.T) {
	sim, url := startSim(t, Config{})
	c := ec2Client(t, url, false)
	mine := must[ENI](t)(sim.AddENI(ENISpec{Secondary: 1}))
	other := must[ENI](t)(sim.AddENI(ENISpec{Secondary: 1}))
	must[*ec2.AssignPrivateIpAddressesOutput](t)(c.AssignPrivateIpAddresses(ctx, &ec2.AssignPrivateIpAddressesInput{
		NetworkInterfaceId: aws.String(mine.ID), SecondaryPrivateIpAddressCount: aws.Int32(1)}))
	must[*ec2.CreateTagsOutput](t)(c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{mine.ID},
		Tags: []types.Tag{{Key: aws.String("k"), Value: aws.String("v")}}}))
	must[*ec2.DetachNetworkInterfaceOutput](t)(c.DetachNetworkInterface(ctx, &ec2.DetachNetworkInterfaceInput{
		AttachmentId: aws.String(mine.AttachmentID)}))
	must[*ec2.DescribeNetworkInterfacesOutput](t)(c.DescribeNetworkInterfaces(ctx, &ec2.DescribeNetworkInterfacesInput{
		NetworkInterfaceIds: []string{mine.ID}}))
	got := sim.ENICalls(mine.ID)
	for _, a := range []string{"AssignPrivateIpAddresses", "CreateTags", "DetachNetworkInterface", "DescribeNetworkInterfaces"} {
		if got[a] != 1 {
			t.Errorf("%s on %s counted %d, want 1 (all: %v)", a, mine.ID, got[a], got)
		}
	}
	if n := sim.ENICalls(other.ID); len(n) != 0 {
		t.Errorf("calls on another ENI counted against %s: %v", other.ID, n)
	}
	sim.ResetCounters()
	if n := sim.ENICalls(mine.ID); len(n) != 0 {
		t.Errorf("after ResetCounters: %v", n)
	}
}
