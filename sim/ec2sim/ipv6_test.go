package ec2sim

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

var ula = netip.MustParsePrefix("fd00::/8")

func describeENI(t *testing.T, c *ec2.Client, id string) types.NetworkInterface {
	t.Helper()
	out := must[*ec2.DescribeNetworkInterfacesOutput](t)(c.DescribeNetworkInterfaces(ctx,
		&ec2.DescribeNetworkInterfacesInput{NetworkInterfaceIds: []string{id}}))
	return out.NetworkInterfaces[0]
}

func subnetIPv6Of(t *testing.T, c *ec2.Client, id string) []string {
	t.Helper()
	out := must[*ec2.DescribeSubnetsOutput](t)(c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: []string{id}}))
	var cidrs []string
	for _, a := range out.Subnets[0].Ipv6CidrBlockAssociationSet {
		if a.Ipv6CidrBlockState == nil || a.Ipv6CidrBlockState.State != types.SubnetCidrBlockStateCodeAssociated {
			t.Errorf("association %+v: want state associated", a)
		}
		cidrs = append(cidrs, aws.ToString(a.Ipv6CidrBlock))
	}
	return cidrs
}

func TestIPv6CIDRsOfVPCAndSubnets(t *testing.T) {
	sim, url := startSim(t, Config{InstanceType: "m5.large"})
	c := ec2Client(t, url, false)
	vpc := sim.VPCIPv6CIDR()
	if vpc.Bits() != 56 || !ula.Contains(vpc.Addr()) || vpc.Masked() != vpc {
		t.Fatalf("VPC IPv6 CIDR %s: want an aligned /56 in fd00::/8", vpc)
	}
	st := sim.State()
	own, ok := sim.SubnetIPv6CIDR(st.SubnetID)
	if !ok || own.Bits() != 64 || !vpc.Contains(own.Addr()) {
		t.Fatalf("node subnet IPv6 CIDR %s %v: want a /64 of %s", own, ok, vpc)
	}
	other := must[string](t)(sim.AddSubnet(netip.MustParsePrefix("100.64.16.0/20"), "", nil))
	v4only := must[string](t)(sim.AddSubnetIPv4Only(netip.MustParsePrefix("100.64.32.0/20"), "", nil))
	second, _ := sim.SubnetIPv6CIDR(other)
	if second.Bits() != 64 || !vpc.Contains(second.Addr()) || second == own {
		t.Fatalf("second subnet %s: want another /64 of %s (not %s)", second, vpc, own)
	}
	if got := subnetIPv6Of(t, c, st.SubnetID); !slices.Equal(got, []string{own.String()}) {
		t.Errorf("DescribeSubnets node subnet: %v, want [%s]", got, own)
	}
	if got := subnetIPv6Of(t, c, v4only); len(got) != 0 {
		t.Errorf("DescribeSubnets IPv4-only subnet: %v, want none", got)
	}
	if p, ok := sim.SubnetIPv6CIDR(v4only); ok {
		t.Errorf("IPv4-only subnet has %s", p)
	}
}

func TestAssignIPv6Prefixes(t *testing.T) {
	sim, url := startSim(t, Config{InstanceType: "m5.large"})
	c := ec2Client(t, url, false)
	st := sim.State()
	eni := st.ENIs[0].ID
	sub, _ := sim.SubnetIPv6CIDR(st.SubnetID)
	var got []string
	for range 2 {
		out := must[*ec2.AssignIpv6AddressesOutput](t)(c.AssignIpv6Addresses(ctx, &ec2.AssignIpv6AddressesInput{
			NetworkInterfaceId: aws.String(eni), Ipv6PrefixCount: aws.Int32(1)}))
		if aws.ToString(out.NetworkInterfaceId) != eni || len(out.AssignedIpv6Prefixes) != 1 || len(out.AssignedIpv6Addresses) != 0 {
			t.Fatalf("answer %+v", out)
		}
		got = append(got, out.AssignedIpv6Prefixes[0])
	}
	for _, s := range got {
		p := netip.MustParsePrefix(s)
		if p.Bits() != 80 || p.Masked() != p || !sub.Contains(p.Addr()) || p.Contains(sub.Addr()) {
			t.Errorf("prefix %s: want an aligned /80 of %s, not the first", p, sub)
		}
	}
	if got[0] == got[1] {
		t.Fatalf("the same /80 twice: %v", got)
	}
	var described []string
	for _, p := range describeENI(t, c, eni).Ipv6Prefixes {
		described = append(described, aws.ToString(p.Ipv6Prefix))
	}
	if !slices.Equal(described, got) {
		t.Fatalf("ipv6PrefixSet %v, want %v", described, got)
	}
	un := must[*ec2.UnassignIpv6AddressesOutput](t)(c.UnassignIpv6Addresses(ctx, &ec2.UnassignIpv6AddressesInput{
		NetworkInterfaceId: aws.String(eni), Ipv6Prefixes: got[:1]}))
	if !slices.Equal(un.UnassignedIpv6Prefixes, got[:1]) {
		t.Fatalf("unassigned %v, want %v", un.UnassignedIpv6Prefixes, got[:1])
	}
	if ps := simENI(t, sim, eni).IPv6Prefixes; len(ps) != 1 || ps[0].String() != got[1] {
		t.Fatalf("State prefixes %v, want [%s]", ps, got[1])
	}
	_, err := c.UnassignIpv6Addresses(ctx, &ec2.UnassignIpv6AddressesInput{NetworkInterfaceId: aws.String(eni), Ipv6Prefixes: got[:1]})
	wantCode(t, err, "InvalidParameterValue", 400)
	if n := sim.Counters(); n["AssignIpv6Addresses"] != 2 || n["UnassignIpv6Addresses"] != 2 {
		t.Errorf("counters %v", n)
	}
}

func TestAssignIPv6Addresses(t *testing.T) {
	sim, url := startSim(t, Config{InstanceType: "m5.large"})
	c := ec2Client(t, url, false)
	st := sim.State()
	eni := aws.String(st.ENIs[0].ID)
	sub, _ := sim.SubnetIPv6CIDR(st.SubnetID)
	out := must[*ec2.AssignIpv6AddressesOutput](t)(c.AssignIpv6Addresses(ctx, &ec2.AssignIpv6AddressesInput{
		NetworkInterfaceId: eni, Ipv6AddressCount: aws.Int32(2)}))
	first := netip.MustParseAddr(out.AssignedIpv6Addresses[0])
	if len(out.AssignedIpv6Addresses) != 2 || !sub.Contains(first) || reserved6(first) {
		t.Fatalf("assigned %v: want 2 unreserved addresses of %s", out.AssignedIpv6Addresses, sub)
	}
	pfx := must[*ec2.AssignIpv6AddressesOutput](t)(c.AssignIpv6Addresses(ctx, &ec2.AssignIpv6AddressesInput{
		NetworkInterfaceId: eni, Ipv6PrefixCount: aws.Int32(1)})).AssignedIpv6Prefixes[0]
	inPrefix := netip.MustParsePrefix(pfx).Addr().Next().String()
	explicit := withOffset(sub, 0x1234).String()
	for _, tc := range []struct {
		name string
		in   ec2.AssignIpv6AddressesInput
		code string
	}{
		{"in use", ec2.AssignIpv6AddressesInput{Ipv6Addresses: []string{first.String()}}, "InvalidIPAddress.InUse"},
		{"in a delegated prefix", ec2.AssignIpv6AddressesInput{Ipv6Addresses: []string{inPrefix}}, "InvalidIPAddress.InUse"},
		{"reserved", ec2.AssignIpv6AddressesInput{Ipv6Addresses: []string{sub.Addr().String()}}, "InvalidParameterValue"},
		{"outside the subnet", ec2.AssignIpv6AddressesInput{Ipv6Addresses: []string{"fd00::1234"}}, "InvalidParameterValue"},
		{"not IPv6", ec2.AssignIpv6AddressesInput{Ipv6Addresses: []string{"100.64.0.9"}}, "InvalidParameterValue"},
		{"unaligned prefix", ec2.AssignIpv6AddressesInput{Ipv6Prefixes: []string{sub.Addr().String() + "/64"}}, "InvalidParameterValue"},
		{"prefix taken", ec2.AssignIpv6AddressesInput{Ipv6Prefixes: []string{pfx}}, "InvalidParameterValue"},
		{"count and list", ec2.AssignIpv6AddressesInput{Ipv6AddressCount: aws.Int32(1), Ipv6Addresses: []string{explicit}}, "InvalidParameterCombination"},
		{"nothing asked", ec2.AssignIpv6AddressesInput{}, "MissingParameter"},
	} {
		in := tc.in
		in.NetworkInterfaceId = eni
		_, err := c.AssignIpv6Addresses(ctx, &in)
		if code, _ := apiErr(t, err); code != tc.code {
			t.Errorf("%s: want %s, got %v", tc.name, tc.code, err)
		}
	}
	if got := simENI(t, sim, *eni); len(got.IPv6s) != 2 || len(got.IPv6Prefixes) != 1 {
		t.Fatalf("refused calls changed the ENI: %+v", got)
	}
	must[*ec2.AssignIpv6AddressesOutput](t)(c.AssignIpv6Addresses(ctx, &ec2.AssignIpv6AddressesInput{
		NetworkInterfaceId: eni, Ipv6Addresses: []string{explicit}}))
	var set []string
	for _, a := range describeENI(t, c, *eni).Ipv6Addresses {
		set = append(set, aws.ToString(a.Ipv6Address))
	}
	want := append(slices.Clone(out.AssignedIpv6Addresses), explicit)
	if !slices.Equal(set, want) {
		t.Fatalf("ipv6AddressesSet %v, want %v", set, want)
	}
	must[*ec2.UnassignIpv6AddressesOutput](t)(c.UnassignIpv6Addresses(ctx, &ec2.UnassignIpv6AddressesInput{
		NetworkInterfaceId: eni, Ipv6Addresses: []string{explicit}}))
	if got := simENI(t, sim, *eni).IPv6s; len(got) != 2 {
		t.Fatalf("after unassign: %v", got)
	}
}

// Addresses and /80s together count against Ipv6AddressesPerInterface
// (t3.small: 4); a refused call changes nothing.
func TestIPv6AddressLimit(t *testing.T) {
	sim, url := startSim(t, Config{InstanceType: "t3.small"})
	c := ec2Client(t, url, false)
	eni := aws.String(sim.State().ENIs[0].ID)
	must[*ec2.AssignIpv6AddressesOutput](t)(c.AssignIpv6Addresses(ctx, &ec2.AssignIpv6AddressesInput{
		NetworkInterfaceId: eni, Ipv6AddressCount: aws.Int32(3)}))
	_, err := c.AssignIpv6Addresses(ctx, &ec2.AssignIpv6AddressesInput{NetworkInterfaceId: eni, Ipv6PrefixCount: aws.Int32(2)})
	wantCode(t, err, "PrivateIpAddressLimitExceeded", 400)
	must[*ec2.AssignIpv6AddressesOutput](t)(c.AssignIpv6Addresses(ctx, &ec2.AssignIpv6AddressesInput{
		NetworkInterfaceId: eni, Ipv6PrefixCount: aws.Int32(1)}))
	if got := simENI(t, sim, *eni); len(got.IPv6s) != 3 || len(got.IPv6Prefixes) != 1 {
		t.Fatalf("ENI %v %v", got.IPv6s, got.IPv6Prefixes)
	}
}

func TestAssignIPv6RefusedWithoutSubnetIPv6(t *testing.T) {
	sim, url := startSim(t, Config{InstanceType: "m5.large"})
	c := ec2Client(t, url, false)
	subnet := must[string](t)(sim.AddSubnetIPv4Only(netip.MustParsePrefix("100.64.16.0/20"), "", nil))
	eni := createENI(t, c, sim, &ec2.CreateNetworkInterfaceInput{SubnetId: aws.String(subnet)})
	_, err := c.AssignIpv6Addresses(ctx, &ec2.AssignIpv6AddressesInput{NetworkInterfaceId: eni.NetworkInterfaceId, Ipv6PrefixCount: aws.Int32(1)})
	wantCode(t, err, "InvalidParameterValue", 400)
	if !strings.Contains(err.Error(), "no IPv6 CIDR") {
		t.Errorf("message does not say why: %v", err)
	}
	// The node's subnet cannot lose its /64 while addresses from it are in use.
	st := sim.State()
	must[*ec2.AssignIpv6AddressesOutput](t)(c.AssignIpv6Addresses(ctx, &ec2.AssignIpv6AddressesInput{
		NetworkInterfaceId: aws.String(st.ENIs[0].ID), Ipv6AddressCount: aws.Int32(1)}))
	if err := sim.DisassociateSubnetIPv6(st.SubnetID); err == nil {
		t.Fatal("DisassociateSubnetIPv6 with addresses in use: want an error")
	}
}

func TestDeletedENIGivesItsIPv6Back(t *testing.T) {
	sim, url := startSim(t, Config{InstanceType: "m5.large"})
	c := ec2Client(t, url, false)
	eni := createENI(t, c, sim, &ec2.CreateNetworkInterfaceInput{})
	pfx := must[*ec2.AssignIpv6AddressesOutput](t)(c.AssignIpv6Addresses(ctx, &ec2.AssignIpv6AddressesInput{
		NetworkInterfaceId: eni.NetworkInterfaceId, Ipv6PrefixCount: aws.Int32(1)})).AssignedIpv6Prefixes
	must[*ec2.DeleteNetworkInterfaceOutput](t)(c.DeleteNetworkInterface(ctx, &ec2.DeleteNetworkInterfaceInput{
		NetworkInterfaceId: eni.NetworkInterfaceId}))
	again := must[*ec2.AssignIpv6AddressesOutput](t)(c.AssignIpv6Addresses(ctx, &ec2.AssignIpv6AddressesInput{
		NetworkInterfaceId: aws.String(sim.State().ENIs[0].ID), Ipv6Prefixes: pfx}))
	if !slices.Equal(again.AssignedIpv6Prefixes, pfx) {
		t.Fatalf("the deleted ENI's /80 %v is not free: %v", pfx, again.AssignedIpv6Prefixes)
	}
}

func TestIPv6FaultsAndDenial(t *testing.T) {
	sim, url := startSim(t, Config{})
	c := ec2Client(t, url, false)
	eni := aws.String(sim.State().ENIs[0].ID)
	sim.FailNext("AssignIpv6Addresses", "RequestLimitExceeded", 1)
	_, err := c.AssignIpv6Addresses(ctx, &ec2.AssignIpv6AddressesInput{NetworkInterfaceId: eni, Ipv6PrefixCount: aws.Int32(1)})
	wantCode(t, err, "RequestLimitExceeded", 503)
	sim.DenyAction("UnassignIpv6Addresses")
	_, err = c.UnassignIpv6Addresses(ctx, &ec2.UnassignIpv6AddressesInput{NetworkInterfaceId: eni, Ipv6Prefixes: []string{"fd00::/80"}})
	wantCode(t, err, "UnauthorizedOperation", 403)
	if len(simENI(t, sim, *eni).IPv6Prefixes) != 0 {
		t.Fatal("a failed call assigned a prefix")
	}
}

func TestIMDSIPv6(t *testing.T) {
	clock := newFakeClock()
	sim, url := startSim(t, Config{InstanceType: "m5.large", Clock: clock.Now})
	c, meta := ec2Client(t, url, false), imdsClient(url)
	st := sim.State()
	mac := "network/interfaces/macs/" + st.ENIs[0].MAC + "/"
	for _, p := range []string{"ipv6", mac + "ipv6s", mac + "ipv6-prefix"} {
		if _, err := meta.GetMetadata(ctx, &imds.GetMetadataInput{Path: p}); err == nil {
			t.Errorf("%s: want 404 before any IPv6 address", p)
		}
	}
	sub, _ := sim.SubnetIPv6CIDR(st.SubnetID)
	if got := getMeta(t, meta, mac+"subnet-ipv6-cidr-blocks"); got != sub.String() {
		t.Errorf("subnet-ipv6-cidr-blocks %q, want %s", got, sub)
	}
	if got := getMeta(t, meta, mac+"vpc-ipv6-cidr-blocks"); got != sim.VPCIPv6CIDR().String() {
		t.Errorf("vpc-ipv6-cidr-blocks %q, want %s", got, sim.VPCIPv6CIDR())
	}
	sim.SetFaults(Faults{IMDSLag: 2 * time.Second})
	eni := aws.String(st.ENIs[0].ID)
	addrs := must[*ec2.AssignIpv6AddressesOutput](t)(c.AssignIpv6Addresses(ctx, &ec2.AssignIpv6AddressesInput{
		NetworkInterfaceId: eni, Ipv6AddressCount: aws.Int32(2)})).AssignedIpv6Addresses
	pfx := must[*ec2.AssignIpv6AddressesOutput](t)(c.AssignIpv6Addresses(ctx, &ec2.AssignIpv6AddressesInput{
		NetworkInterfaceId: eni, Ipv6PrefixCount: aws.Int32(1)})).AssignedIpv6Prefixes
	if _, err := meta.GetMetadata(ctx, &imds.GetMetadataInput{Path: mac + "ipv6-prefix"}); err == nil {
		t.Error("ipv6-prefix shown within the lag")
	}
	clock.Advance(2 * time.Second)
	if got := getMeta(t, meta, mac+"ipv6s"); got != strings.Join(addrs, "\n") {
		t.Errorf("ipv6s %q, want %q", got, addrs)
	}
	if got := getMeta(t, meta, mac+"ipv6-prefix"); got != pfx[0] {
		t.Errorf("ipv6-prefix %q, want %s", got, pfx[0])
	}
	if got := getMeta(t, meta, "ipv6"); got != addrs[0] {
		t.Errorf("ipv6 %q, want %s", got, addrs[0])
	}
	keys := getMeta(t, meta, mac)
	for _, k := range []string{"ipv6s", "ipv6-prefix", "subnet-ipv6-cidr-blocks", "vpc-ipv6-cidr-blocks"} {
		if !slices.Contains(strings.Fields(keys), k) {
			t.Errorf("per-MAC keys lack %s: %q", k, keys)
		}
	}
	must[*ec2.UnassignIpv6AddressesOutput](t)(c.UnassignIpv6Addresses(ctx, &ec2.UnassignIpv6AddressesInput{
		NetworkInterfaceId: eni, Ipv6Prefixes: pfx}))
	if got := getMeta(t, meta, mac+"ipv6-prefix"); got != pfx[0] {
		t.Errorf("within the lag IMDS must still show %s, got %q", pfx[0], got)
	}
	clock.Advance(2 * time.Second)
	if _, err := meta.GetMetadata(ctx, &imds.GetMetadataInput{Path: mac + "ipv6-prefix"}); err == nil {
		t.Error("ipv6-prefix still shown after the lag")
	}
}

func simENI(t *testing.T, sim *Sim, id string) ENI {
	t.Helper()
	for _, e := range sim.State().ENIs {
		if e.ID == id {
			return e
		}
	}
	t.Fatalf("no ENI %s", id)
	return ENI{}
}
