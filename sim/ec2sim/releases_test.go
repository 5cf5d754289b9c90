package ec2sim

import (
	"net/netip"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// Releases records what each successful release took away, and nothing for
// a call that failed.
func TestReleasesRecordWhatEachSuccessfulCallTookAway(t *testing.T) {
	sim, url := startSim(t, Config{})
	c := ec2Client(t, url, false)
	eni := must[ENI](t)(sim.AddENI(ENISpec{Secondary: 2}))
	give := eni.Secondary[1]
	must[*ec2.UnassignPrivateIpAddressesOutput](t)(c.UnassignPrivateIpAddresses(ctx, &ec2.UnassignPrivateIpAddressesInput{
		NetworkInterfaceId: aws.String(eni.ID), PrivateIpAddresses: []string{give.String()}}))
	if _, err := c.UnassignPrivateIpAddresses(ctx, &ec2.UnassignPrivateIpAddressesInput{
		NetworkInterfaceId: aws.String(eni.ID), PrivateIpAddresses: []string{give.String()}}); err == nil {
		t.Fatalf("unassigning %s twice succeeded", give)
	}
	got := sim.Releases()
	if len(got) != 1 {
		t.Fatalf("%d releases recorded, want 1: %+v", len(got), got)
	}
	r := got[0]
	if r.Action != "UnassignPrivateIpAddresses" || r.ENIID != eni.ID || len(r.Addrs) != 1 || r.Addrs[0] != netip.PrefixFrom(give, 32) {
		t.Errorf("recorded %+v, want the unassign of %s/32 on %s", r, give, eni.ID)
	}
}
