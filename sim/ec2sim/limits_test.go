package ec2sim

import (
	"net/netip"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// t3.small: 3 ENIs, 4 IPv4 slots per ENI (primary included; a /28 takes one).
func TestPrivateIPLimit(t *testing.T) {
	sim, url := startSim(t, Config{InstanceType: "t3.small"})
	c := ec2Client(t, url, false)
	_, err := c.CreateNetworkInterface(ctx, &ec2.CreateNetworkInterfaceInput{SubnetId: aws.String(sim.State().SubnetID),
		SecondaryPrivateIpAddressCount: aws.Int32(4)})
	wantCode(t, err, "PrivateIpAddressLimitExceeded", 400)

	id := aws.ToString(createENI(t, c, sim, &ec2.CreateNetworkInterfaceInput{SecondaryPrivateIpAddressCount: aws.Int32(2)}).NetworkInterfaceId)
	assign := func(ips, prefixes int32) error {
		in := &ec2.AssignPrivateIpAddressesInput{NetworkInterfaceId: aws.String(id)}
		if ips > 0 {
			in.SecondaryPrivateIpAddressCount = aws.Int32(ips)
		}
		if prefixes > 0 {
			in.Ipv4PrefixCount = aws.Int32(prefixes)
		}
		_, err := c.AssignPrivateIpAddresses(ctx, in)
		return err
	}
	wantCode(t, assign(2, 0), "PrivateIpAddressLimitExceeded", 400)
	wantCode(t, assign(0, 2), "PrivateIpAddressLimitExceeded", 400)
	if err := assign(0, 1); err != nil { // the last slot, as a prefix
		t.Fatal(err)
	}
	wantCode(t, assign(1, 0), "PrivateIpAddressLimitExceeded", 400)
	if st := stateENI(t, sim, id); len(st.Secondary) != 2 || len(st.Prefixes) != 1 {
		t.Fatalf("state: %+v", st)
	}

	pfx := createENI(t, c, sim, &ec2.CreateNetworkInterfaceInput{Ipv4PrefixCount: aws.Int32(3)})
	if len(pfx.Ipv4Prefixes) != 3 {
		t.Fatalf("prefixes: %+v", pfx.Ipv4Prefixes)
	}
	_, err = c.AssignPrivateIpAddresses(ctx, &ec2.AssignPrivateIpAddressesInput{
		NetworkInterfaceId: pfx.NetworkInterfaceId, Ipv4PrefixCount: aws.Int32(1)})
	wantCode(t, err, "PrivateIpAddressLimitExceeded", 400)
}

func TestAttachmentLimit(t *testing.T) {
	sim, url := startSim(t, Config{InstanceType: "t3.small"})
	c := ec2Client(t, url, false)
	var ids []string
	for range 3 {
		ids = append(ids, aws.ToString(createENI(t, c, sim, &ec2.CreateNetworkInterfaceInput{}).NetworkInterfaceId))
	}
	attachENI(t, c, sim, ids[0], 1)
	attach := func(id string, device int32) error {
		_, err := c.AttachNetworkInterface(ctx, &ec2.AttachNetworkInterfaceInput{NetworkInterfaceId: aws.String(id),
			InstanceId: aws.String(sim.State().InstanceID), DeviceIndex: aws.Int32(device)})
		return err
	}
	wantCode(t, attach(ids[1], 1), "InvalidParameterValue", 400) // device index taken
	wantCode(t, attach(ids[0], 2), "InvalidNetworkInterface.InUse", 400)
	attachENI(t, c, sim, ids[1], 2)
	wantCode(t, attach(ids[2], 3), "AttachmentLimitExceeded", 400)
}

func TestSubnetExhaustion(t *testing.T) {
	sim, url := startSim(t, Config{})
	c := ec2Client(t, url, false)
	id := aws.ToString(createENI(t, c, sim, &ec2.CreateNetworkInterfaceInput{}).NetworkInterfaceId)
	sim.SetSubnetFree(2)
	if free := subnetFree(t, c); free != 2 {
		t.Fatalf("free: %d", free)
	}
	_, err := c.AssignPrivateIpAddresses(ctx, &ec2.AssignPrivateIpAddressesInput{NetworkInterfaceId: aws.String(id),
		SecondaryPrivateIpAddressCount: aws.Int32(3)})
	wantCode(t, err, "InsufficientFreeAddressesInSubnet", 400)
	if free := subnetFree(t, c); free != 2 {
		t.Fatalf("a failed assign must take nothing; free: %d", free)
	}
	must[*ec2.AssignPrivateIpAddressesOutput](t)(c.AssignPrivateIpAddresses(ctx, &ec2.AssignPrivateIpAddressesInput{
		NetworkInterfaceId: aws.String(id), SecondaryPrivateIpAddressCount: aws.Int32(2)}))
	if free := subnetFree(t, c); free != 0 {
		t.Fatalf("free: %d", free)
	}
	_, err = c.CreateNetworkInterface(ctx, &ec2.CreateNetworkInterfaceInput{SubnetId: aws.String(sim.State().SubnetID)})
	wantCode(t, err, "InsufficientFreeAddressesInSubnet", 400)
	sim.SetSubnetFree(10) // the other tenants leave
	if free := subnetFree(t, c); free != 10 {
		t.Fatalf("free after growing back: %d", free)
	}
}

func TestPrefixExhaustionAndAlignment(t *testing.T) {
	sim, url := startSim(t, Config{InstanceType: "m5.4xlarge"})
	c := ec2Client(t, url, false)
	eni := createENI(t, c, sim, &ec2.CreateNetworkInterfaceInput{})
	id := aws.ToString(eni.NetworkInterfaceId)
	must[*ec2.AssignPrivateIpAddressesOutput](t)(c.AssignPrivateIpAddresses(ctx, &ec2.AssignPrivateIpAddressesInput{
		NetworkInterfaceId: aws.String(id), SecondaryPrivateIpAddressCount: aws.Int32(12)})) // .6 ... .17
	out := must[*ec2.AssignPrivateIpAddressesOutput](t)(c.AssignPrivateIpAddresses(ctx, &ec2.AssignPrivateIpAddressesInput{
		NetworkInterfaceId: aws.String(id), Ipv4PrefixCount: aws.Int32(2)}))
	var got []string
	for _, p := range out.AssignedIpv4Prefixes {
		got = append(got, aws.ToString(p.Ipv4Prefix))
	}
	// 100.64.0.0/28 holds the reserved and used addresses, .16/28 holds .16 and .17.
	if len(got) != 2 || got[0] != "100.64.0.32/28" || got[1] != "100.64.0.48/28" {
		t.Fatalf("prefixes: %v", got)
	}
	st := stateENI(t, sim, id)
	for _, p := range st.Prefixes {
		for _, e := range sim.State().ENIs {
			for _, a := range append([]netip.Addr{e.PrimaryIP}, e.Secondary...) {
				if p.Contains(a) {
					t.Fatalf("prefix %s overlaps used address %s", p, a)
				}
			}
		}
	}
	if free := subnetFree(t, c); free != 4090-1-12-32 {
		t.Fatalf("free: %d", free)
	}

	sim.SetSubnetFree(20) // 20 addresses left, but no whole aligned /28 among them
	_, err := c.AssignPrivateIpAddresses(ctx, &ec2.AssignPrivateIpAddressesInput{
		NetworkInterfaceId: aws.String(id), Ipv4PrefixCount: aws.Int32(1)})
	wantCode(t, err, "InsufficientCidrBlocks", 400)

	sim.SetSubnetFree(4000)
	sim.FragmentSubnet()
	_, err = c.AssignPrivateIpAddresses(ctx, &ec2.AssignPrivateIpAddressesInput{
		NetworkInterfaceId: aws.String(id), Ipv4PrefixCount: aws.Int32(1)})
	wantCode(t, err, "InsufficientCidrBlocks", 400)
	must[*ec2.AssignPrivateIpAddressesOutput](t)(c.AssignPrivateIpAddresses(ctx, &ec2.AssignPrivateIpAddressesInput{
		NetworkInterfaceId: aws.String(id), SecondaryPrivateIpAddressCount: aws.Int32(1)})) // single IPs still work
}

func TestExplicitAddresses(t *testing.T) {
	sim, url := startSim(t, Config{InstanceType: "m5.large"})
	c := ec2Client(t, url, false)
	id := aws.ToString(createENI(t, c, sim, &ec2.CreateNetworkInterfaceInput{}).NetworkInterfaceId)
	must[*ec2.AssignPrivateIpAddressesOutput](t)(c.AssignPrivateIpAddresses(ctx, &ec2.AssignPrivateIpAddressesInput{
		NetworkInterfaceId: aws.String(id), PrivateIpAddresses: []string{"100.64.1.10"}, Ipv4Prefixes: []string{"100.64.2.0/28"}}))
	_, err := c.AssignPrivateIpAddresses(ctx, &ec2.AssignPrivateIpAddressesInput{
		NetworkInterfaceId: aws.String(id), PrivateIpAddresses: []string{"100.64.1.10"}})
	wantCode(t, err, "InvalidIPAddress.InUse", 400)
	_, err = c.AssignPrivateIpAddresses(ctx, &ec2.AssignPrivateIpAddressesInput{
		NetworkInterfaceId: aws.String(id), PrivateIpAddresses: []string{"100.64.2.3"}}) // inside the prefix
	wantCode(t, err, "InvalidIPAddress.InUse", 400)
	_, err = c.AssignPrivateIpAddresses(ctx, &ec2.AssignPrivateIpAddressesInput{
		NetworkInterfaceId: aws.String(id), SecondaryPrivateIpAddressCount: aws.Int32(1), PrivateIpAddresses: []string{"100.64.1.11"}})
	wantCode(t, err, "InvalidParameterCombination", 400)
	_, err = c.AssignPrivateIpAddresses(ctx, &ec2.AssignPrivateIpAddressesInput{NetworkInterfaceId: aws.String(id)})
	wantCode(t, err, "MissingParameter", 400)
	must[*ec2.UnassignPrivateIpAddressesOutput](t)(c.UnassignPrivateIpAddresses(ctx, &ec2.UnassignPrivateIpAddressesInput{
		NetworkInterfaceId: aws.String(id), Ipv4Prefixes: []string{"100.64.2.0/28"}}))
	if st := stateENI(t, sim, id); len(st.Prefixes) != 0 || len(st.Secondary) != 1 {
		t.Fatalf("state: %+v", st)
	}
}

func TestIsResourceID(t *testing.T) {
	for id, want := range map[string]bool{
		"eni-0123456789abcdef0": true, "eni-01234567": true, "eni-0123456": false,
		"eni-0123456789abcdef01": false, "eni-0123456789ABCDEF0": false, "sg-01234567": false, "eni-": false,
	} {
		if got := isResourceID(id, "eni-"); got != want {
			t.Errorf("isResourceID(%q) = %v, want %v", id, got, want)
		}
	}
}
