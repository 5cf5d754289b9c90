package ec2sim

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

func TestRequestsRecordEachCallWithItsParameters(t *testing.T) {
	sim, url := startSim(t, Config{})
	c := ec2Client(t, url, false)
	eni := must[ENI](t)(sim.AddENI(ENISpec{Secondary: 2}))
	give := eni.Secondary[1].String()
	must[*ec2.UnassignPrivateIpAddressesOutput](t)(c.UnassignPrivateIpAddresses(ctx, &ec2.UnassignPrivateIpAddressesInput{
		NetworkInterfaceId: aws.String(eni.ID), PrivateIpAddresses: []string{give}}))
	got := sim.Requests("UnassignPrivateIpAddresses")
	if len(got) != 1 {
		t.Fatalf("%d UnassignPrivateIpAddresses recorded, want 1: %+v", len(got), got)
	}
	if p := got[0].Params; p.Get("NetworkInterfaceId") != eni.ID || p.Get("PrivateIpAddress.1") != give {
		t.Errorf("recorded parameters %v, want %s on %s", p, give, eni.ID)
	}
	if n := len(sim.Requests("")); n < 1 {
		t.Errorf("Requests(\"\") lists %d calls", n)
	}
	sim.ResetCounters()
	if n := len(sim.Requests("")); n != 0 {
		t.Errorf("after ResetCounters: %d calls recorded", n)
	}
}
