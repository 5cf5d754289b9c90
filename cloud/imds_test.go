package cloud

import (
	"net/netip"
	"slices"
	"testing"

	"vpc-cni/sim/ec2sim"
)

func TestIdentity(t *testing.T) {
	sim := startSim(t, ec2sim.Config{Region: "eu-west-1", InstanceType: "m5.large"})
	c := newClient(t, Options{})
	id, err := c.Identity(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	st := sim.State()
	primary := st.ENIs[0]
	want := Identity{InstanceID: st.InstanceID, InstanceType: "m5.large", Region: "eu-west-1", AZ: "eu-west-1a",
		PrimaryMAC: primary.MAC, PrimaryENI: primary.ID, VPCID: st.VPCID, SubnetID: st.SubnetID,
		PrimaryIP: primary.PrimaryIP, SubnetCIDR: netip.MustParsePrefix("100.64.0.0/20"),
		VPCCIDRs: []netip.Prefix{netip.MustParsePrefix("100.64.0.0/16")}}
	sgs := id.SecurityGroups
	id.SecurityGroups = nil
	if !identityEqual(id, want) || len(sgs) == 0 {
		t.Fatalf("Identity =\n %+v\nwant\n %+v (and security groups, got %v)", id, want, sgs)
	}
	sim.ResetCounters()
	if _, err := c.Identity(testCtx(t)); err != nil || sim.Counters()["IMDS"] != 0 {
		t.Fatalf("second Identity: err %v, %d IMDS calls, want cached", err, sim.Counters()["IMDS"])
	}
}

func identityEqual(a, b Identity) bool {
	return slices.Equal(a.VPCCIDRs, b.VPCCIDRs) && slices.Equal(a.SecurityGroups, b.SecurityGroups) &&
		a.InstanceID == b.InstanceID && a.InstanceType == b.InstanceType && a.Region == b.Region && a.AZ == b.AZ &&
		a.PrimaryMAC == b.PrimaryMAC && a.PrimaryENI == b.PrimaryENI && a.VPCID == b.VPCID &&
		a.SubnetID == b.SubnetID && a.PrimaryIP == b.PrimaryIP && a.SubnetCIDR == b.SubnetCIDR
}

func TestAttachedInterfaces(t *testing.T) {
	sim := startSim(t, ec2sim.Config{InstanceType: "m5.large"})
	c := newClient(t, Options{})
	ctx := testCtx(t)
	st := sim.State()
	eni, err := c.CreateENI(ctx, CreateENIRequest{SubnetID: st.SubnetID, InstanceID: st.InstanceID, Count: 1, Prefixes: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AttachENI(ctx, eni.ID, st.InstanceID, 1); err != nil {
		t.Fatal(err)
	}
	ifaces, err := c.AttachedInterfaces(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ifaces) != 2 {
		t.Fatalf("AttachedInterfaces = %+v, want 2", ifaces)
	}
	p, s := ifaces[0], ifaces[1]
	if p.DeviceIndex != 0 || p.ENIID != st.ENIs[0].ID || p.MAC != st.ENIs[0].MAC || len(p.IPv4s) != 1 ||
		p.IPv4s[0] != st.ENIs[0].PrimaryIP || len(p.Prefixes) != 0 {
		t.Errorf("primary interface %+v, sim %+v", p, st.ENIs[0])
	}
	if s.DeviceIndex != 1 || s.ENIID != eni.ID || s.MAC != eni.MAC || len(s.IPv4s) != 1 ||
		!slices.Equal(s.Prefixes, eni.Prefixes) {
		t.Errorf("secondary interface %+v, ENI %+v", s, eni)
	}
}

// TestRegionFromIMDS: with no region configured, the client asks IMDS.
func TestRegionFromIMDS(t *testing.T) {
	sim := startSim(t, ec2sim.Config{Region: "ap-south-1"})
	t.Setenv("AWS_REGION", "")
	c := newClient(t, Options{})
	if _, err := c.Subnet(testCtx(t), sim.State().SubnetID); err != nil {
		t.Fatal(err)
	}
	if got := c.ec2.client().Options().Region; got != "ap-south-1" {
		t.Fatalf("region %q, want ap-south-1 from IMDS", got)
	}
}

// TestNewDoesNoIO: New touches nothing; only the first call does.
func TestNewDoesNoIO(t *testing.T) {
	sim := startSim(t, ec2sim.Config{})
	c := newClient(t, Options{})
	if c.cfg != nil || !c.ec2.empty() || c.imds != nil {
		t.Fatal("New loaded the configuration")
	}
	if n := sim.Counters()["IMDS"]; n != 0 {
		t.Fatalf("New made %d IMDS calls", n)
	}
}

func TestVPCCIDRsSeesACIDRAssociatedLater(t *testing.T) {
	sim := startSim(t, ec2sim.Config{})
	c := newClient(t, Options{})
	mac := sim.State().ENIs[0].MAC
	sim.AssociateVPCCIDR(netip.MustParsePrefix("100.80.0.0/16"))
	got, err := c.VPCCIDRs(testCtx(t), mac)
	want := []netip.Prefix{netip.MustParsePrefix("100.64.0.0/16"), netip.MustParsePrefix("100.80.0.0/16")}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("VPCCIDRs = %v, %v; want %v", got, err, want)
	}
}
