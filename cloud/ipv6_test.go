package cloud

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"vpc-cni/sim/ec2sim"
)

func TestAssignIPv6PrefixAndRead(t *testing.T) {
	sim := startSim(t, ec2sim.Config{InstanceType: "m5.large"})
	c := newClient(t, Options{})
	ctx := testCtx(t)
	st := sim.State()
	primary := st.ENIs[0].ID
	subnet6, _ := sim.SubnetIPv6CIDR(st.SubnetID)
	pfx, err := c.AssignIPv6Prefix(ctx, primary)
	if err != nil {
		t.Fatal(err)
	}
	if pfx.Bits() != 80 || !subnet6.Contains(pfx.Addr()) {
		t.Fatalf("AssignIPv6Prefix = %s, want a /80 of %s", pfx, subnet6)
	}
	got, err := c.AssignIPv6(ctx, primary, IPv6Request{AddressCount: 2})
	if err != nil || len(got.Addresses) != 2 || len(got.Prefixes) != 0 {
		t.Fatalf("AssignIPv6(2 addresses) = %+v, %v", got, err)
	}
	eni, err := c.ENIByID(ctx, primary)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(eni.IPv6Prefixes, []netip.Prefix{pfx}) || !slices.Equal(eni.IPv6s, got.Addresses) {
		t.Fatalf("ENIByID IPv6 %v %v, want %s and %v", eni.IPv6s, eni.IPv6Prefixes, pfx, got.Addresses)
	}
	enis, err := c.InstanceENIs(ctx, st.InstanceID)
	if err != nil || !slices.Equal(enis[0].IPv6Prefixes, []netip.Prefix{pfx}) {
		t.Fatalf("InstanceENIs: %v %+v", err, enis)
	}
	if err := c.UnassignIPv6(ctx, primary, got.Addresses[:1], []netip.Prefix{pfx}); err != nil {
		t.Fatal(err)
	}
	after := simENI(t, sim, primary)
	if len(after.IPv6Prefixes) != 0 || !slices.Equal(after.IPv6s, got.Addresses[1:]) {
		t.Fatalf("after UnassignIPv6: %v %v", after.IPv6s, after.IPv6Prefixes)
	}
	// Put the same /80 back explicitly, as a repair would.
	again, err := c.AssignIPv6(ctx, primary, IPv6Request{Prefixes: []netip.Prefix{pfx}})
	if err != nil || !slices.Equal(again.Prefixes, []netip.Prefix{pfx}) {
		t.Fatalf("AssignIPv6(explicit %s) = %+v, %v", pfx, again, err)
	}
	if n := sim.Counters(); n["AssignIpv6Addresses"] != 3 || n["UnassignIpv6Addresses"] != 1 {
		t.Errorf("one call per request: %v", n)
	}
	if err := c.UnassignIPv6(ctx, primary, nil, nil); err != nil || sim.Counters()["UnassignIpv6Addresses"] != 1 {
		t.Errorf("nothing to unassign: %v, %d calls", err, sim.Counters()["UnassignIpv6Addresses"])
	}
}

func TestSubnetIPv6CIDRs(t *testing.T) {
	sim := startSim(t, ec2sim.Config{})
	c := newClient(t, Options{})
	st := sim.State()
	v4only, err := sim.AddSubnetIPv4Only(netip.MustParsePrefix("100.64.16.0/20"), "", map[string]string{CNISubnetTag: "1"})
	if err != nil {
		t.Fatal(err)
	}
	own, _ := sim.SubnetIPv6CIDR(st.SubnetID)
	sub, err := c.Subnet(testCtx(t), st.SubnetID)
	if err != nil || !slices.Equal(sub.IPv6CIDRs, []netip.Prefix{own}) {
		t.Fatalf("Subnet IPv6CIDRs %v (%v), want [%s]", sub.IPv6CIDRs, err, own)
	}
	subs, err := c.ZoneSubnets(testCtx(t), st.VPCID, st.AZ)
	if err != nil || len(subs) != 2 {
		t.Fatalf("ZoneSubnets %+v %v", subs, err)
	}
	for _, s := range subs {
		if want := s.ID != v4only; want != (len(s.IPv6CIDRs) == 1) {
			t.Errorf("subnet %s IPv6CIDRs %v", s.ID, s.IPv6CIDRs)
		}
	}
}

func TestIPv6Errors(t *testing.T) {
	sim := startSim(t, ec2sim.Config{InstanceType: "t3.small"}) // 4 IPv6 slots per ENI
	c := newClient(t, Options{})
	ctx := testCtx(t)
	st := sim.State()
	primary := st.ENIs[0].ID
	if _, err := c.AssignIPv6(ctx, primary, IPv6Request{AddressCount: 3}); err != nil {
		t.Fatal(err)
	}
	_, err := c.AssignIPv6(ctx, primary, IPv6Request{PrefixCount: 2})
	wantKind(t, err, KindLimit, "ec2:AssignIpv6Addresses", "limit")
	if n := len(simENI(t, sim, primary).IPv6Prefixes); n != 0 {
		t.Fatalf("a refused call left %d prefixes", n)
	}

	v4only, err := sim.AddSubnetIPv4Only(netip.MustParsePrefix("100.64.16.0/20"), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	eni, err := c.CreateENI(ctx, CreateENIRequest{SubnetID: v4only, InstanceID: st.InstanceID})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.AssignIPv6Prefix(ctx, eni.ID)
	wantKind(t, err, KindOther, "has no IPv6 CIDR", eni.ID, "associate an IPv6 /64")
	if !errors.Is(err, ErrSubnetNoIPv6) {
		t.Errorf("errors.Is(err, ErrSubnetNoIPv6) is false: %v", err)
	}

	sim.DenyAction("UnassignIpv6Addresses")
	err = c.UnassignIPv6(ctx, primary, simENI(t, sim, primary).IPv6s[:1], nil)
	wantKind(t, err, KindUnauthorized, "ec2:UnassignIpv6Addresses")
	if errors.Is(err, ErrSubnetNoIPv6) {
		t.Error("a denial is not a missing IPv6 CIDR")
	}
	if err := c.UnassignIPv6(ctx, primary, []netip.Addr{netip.MustParseAddr("100.64.0.9")}, nil); err == nil ||
		!strings.Contains(err.Error(), "not an IPv6 address") {
		t.Errorf("IPv4 address to UnassignIPv6: %v", err)
	}
	sim.FailNext("AssignIpv6Addresses", "InsufficientCidrBlocks", 1)
	_, err = c.AssignIPv6Prefix(ctx, primary)
	wantKind(t, err, KindNoFreePrefix, "/80")
}

func TestIMDSIPv6(t *testing.T) {
	sim := startSim(t, ec2sim.Config{InstanceType: "m5.large"})
	c := newClient(t, Options{})
	ctx := testCtx(t)
	st := sim.State()
	mac := st.ENIs[0].MAC
	n, err := c.NodeIPv6(ctx, mac)
	own, _ := sim.SubnetIPv6CIDR(st.SubnetID)
	if err != nil || n.PrimaryIPv6.IsValid() || n.SubnetIPv6CIDR != own ||
		!slices.Equal(n.VPCIPv6CIDRs, []netip.Prefix{sim.VPCIPv6CIDR()}) {
		t.Fatalf("NodeIPv6 before any address = %+v, %v", n, err)
	}
	if a, err := c.PrimaryIPv6(ctx, mac); err != nil || a.IsValid() {
		t.Fatalf("PrimaryIPv6 before any address = %s, %v; want none", a, err)
	}
	pfx, err := c.AssignIPv6Prefix(ctx, st.ENIs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.AssignIPv6(ctx, st.ENIs[0].ID, IPv6Request{AddressCount: 1})
	if err != nil {
		t.Fatal(err)
	}
	if n, err = c.NodeIPv6(ctx, mac); err != nil || n.PrimaryIPv6 != got.Addresses[0] {
		t.Fatalf("NodeIPv6 = %+v, %v; want ipv6 %s", n, err, got.Addresses[0])
	}
	if a, err := c.PrimaryIPv6(ctx, mac); err != nil || a != got.Addresses[0] {
		t.Fatalf("PrimaryIPv6 = %s, %v; want %s (the /80 is not a /128 of ipv6s)", a, err, got.Addresses[0])
	}
	ifaces, err := c.AttachedInterfacesIPv6(ctx)
	if err != nil || len(ifaces) != 1 {
		t.Fatalf("AttachedInterfacesIPv6 = %+v, %v", ifaces, err)
	}
	i := ifaces[0]
	if !slices.Equal(i.IPv6Prefixes, []netip.Prefix{pfx}) || !slices.Equal(i.IPv6s, got.Addresses) || i.SubnetIPv6CIDR != own ||
		len(i.IPv4s) != 1 {
		t.Fatalf("interface %+v", i)
	}
	plain, err := c.AttachedInterfaces(ctx)
	if err != nil || plain[0].IPv6s != nil || plain[0].IPv6Prefixes != nil || plain[0].SubnetIPv6CIDR.IsValid() {
		t.Fatalf("AttachedInterfaces reads no IPv6: %+v %v", plain, err)
	}
}

// An ENI in an IPv4-only subnet: every IPv6 path 404s, and the readers
// give empty values, not errors.
func TestIMDSIPv6AbsentOnIPv4OnlySubnet(t *testing.T) {
	sim := startSim(t, ec2sim.Config{})
	c := newClient(t, Options{})
	ctx := testCtx(t)
	st := sim.State()
	v4only, err := sim.AddSubnetIPv4Only(netip.MustParsePrefix("100.64.16.0/20"), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	eni, err := c.CreateENI(ctx, CreateENIRequest{SubnetID: v4only, InstanceID: st.InstanceID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AttachENI(ctx, eni.ID, st.InstanceID, 1); err != nil {
		t.Fatal(err)
	}
	n, err := c.NodeIPv6(ctx, eni.MAC)
	if err != nil || n.PrimaryIPv6.IsValid() || n.SubnetIPv6CIDR.IsValid() || len(n.VPCIPv6CIDRs) != 1 {
		t.Fatalf("NodeIPv6 on the IPv4-only subnet's ENI = %+v, %v (the VPC still has its /56)", n, err)
	}
	ifaces, err := c.AttachedInterfacesIPv6(ctx)
	if err != nil || len(ifaces) != 2 || ifaces[1].SubnetIPv6CIDR.IsValid() || ifaces[1].IPv6s != nil {
		t.Fatalf("AttachedInterfacesIPv6 = %+v, %v", ifaces, err)
	}
}
