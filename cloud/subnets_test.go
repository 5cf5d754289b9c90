package cloud

import (
	"net/netip"
	"testing"

	"vpc-cni/sim/ec2sim"
)

// Only tagged subnets of the node's VPC and zone, most free first; an ENI
// created in one takes its addresses from it.
func TestCNISubnetsAreTheTaggedOnesOfTheZoneMostFreeFirst(t *testing.T) {
	sim := startSim(t, ec2sim.Config{})
	cni := map[string]string{CNISubnetTag: "1"}
	small, err := sim.AddSubnet(netip.MustParsePrefix("100.64.16.0/24"), "", cni)
	if err != nil {
		t.Fatal(err)
	}
	big, _ := sim.AddSubnet(netip.MustParsePrefix("100.64.32.0/22"), "", cni)
	if _, err := sim.AddSubnet(netip.MustParsePrefix("100.64.48.0/22"), "", nil); err != nil { // untagged
		t.Fatal(err)
	}
	if _, err := sim.AddSubnet(netip.MustParsePrefix("100.64.64.0/22"), "us-west-2b", cni); err != nil { // other zone
		t.Fatal(err)
	}
	if _, err := sim.AddSubnet(netip.MustParsePrefix("100.65.0.0/24"), "", cni); err == nil {
		t.Fatal("a subnet outside the VPC was accepted")
	}
	st := sim.State()
	c := newClient(t, Options{})
	got, err := c.CNISubnets(testCtx(t), st.VPCID, "us-west-2a")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != big || got[1].ID != small || got[0].Available != 1019 || got[1].Available != 251 {
		t.Fatalf("CNISubnets = %+v; want %s (1019 free) then %s (251 free)", got, big, small)
	}
	eni, err := c.CreateENI(testCtx(t), CreateENIRequest{SubnetID: small, InstanceID: st.InstanceID, Count: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !got[1].CIDR.Contains(eni.PrimaryIP) || eni.SubnetID != small {
		t.Fatalf("ENI %s in %s: primary %s is not in %s", eni.ID, eni.SubnetID, eni.PrimaryIP, got[1].CIDR)
	}
	if free := sim.SubnetFreeOf(small); free != 251-3 {
		t.Fatalf("%s has %d free after an ENI with 3 addresses; want %d", small, free, 251-3)
	}
}
