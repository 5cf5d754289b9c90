package ec2sim

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

func createENI(t testing.TB, c *ec2.Client, sim *Sim, in *ec2.CreateNetworkInterfaceInput) types.NetworkInterface {
	t.Helper()
	if in.SubnetId == nil {
		in.SubnetId = aws.String(sim.State().SubnetID)
	}
	out := must[*ec2.CreateNetworkInterfaceOutput](t)(c.CreateNetworkInterface(ctx, in))
	return *out.NetworkInterface
}

func attachENI(t testing.TB, c *ec2.Client, sim *Sim, eniID string, device int32) string {
	t.Helper()
	out := must[*ec2.AttachNetworkInterfaceOutput](t)(c.AttachNetworkInterface(ctx, &ec2.AttachNetworkInterfaceInput{
		NetworkInterfaceId: aws.String(eniID), InstanceId: aws.String(sim.State().InstanceID), DeviceIndex: aws.Int32(device)}))
	return aws.ToString(out.AttachmentId)
}

func subnetFree(t *testing.T, c *ec2.Client) int32 {
	t.Helper()
	out := must[*ec2.DescribeSubnetsOutput](t)(c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{}))
	if len(out.Subnets) != 1 {
		t.Fatalf("want 1 subnet, got %d", len(out.Subnets))
	}
	return aws.ToInt32(out.Subnets[0].AvailableIpAddressCount)
}

func TestDescribeNode(t *testing.T) {
	sim, url := startSim(t, Config{InstanceType: "m5.large"})
	c := ec2Client(t, url, false)

	di := must[*ec2.DescribeInstancesOutput](t)(c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{
		InstanceIds: []string{"i-0123456789abcdef0"}}))
	inst := di.Reservations[0].Instances[0]
	if aws.ToString(inst.InstanceId) != "i-0123456789abcdef0" || inst.InstanceType != "m5.large" ||
		aws.ToString(inst.Placement.AvailabilityZone) != "us-west-2a" {
		t.Fatalf("instance: %+v", inst)
	}
	if len(inst.NetworkInterfaces) != 1 || aws.ToInt32(inst.NetworkInterfaces[0].Attachment.DeviceIndex) != 0 ||
		aws.ToString(inst.PrivateIpAddress) != "100.64.0.4" {
		t.Fatalf("primary ENI: %+v", inst.NetworkInterfaces)
	}

	dt := must[*ec2.DescribeInstanceTypesOutput](t)(c.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{
		InstanceTypes: []types.InstanceType{"m5.large", "c5n.metal"}}))
	got := map[types.InstanceType]types.InstanceTypeInfo{}
	for _, it := range dt.InstanceTypes {
		got[it.InstanceType] = it
	}
	m5 := got["m5.large"]
	if aws.ToInt32(m5.NetworkInfo.MaximumNetworkInterfaces) != 3 || aws.ToInt32(m5.NetworkInfo.Ipv4AddressesPerInterface) != 10 ||
		m5.Hypervisor != types.InstanceTypeHypervisorNitro || aws.ToBool(m5.BareMetal) {
		t.Fatalf("m5.large: %+v", m5.NetworkInfo)
	}
	if metal := got["c5n.metal"]; !aws.ToBool(metal.BareMetal) || metal.Hypervisor != "" {
		t.Fatalf("c5n.metal: bare metal %v hypervisor %q", aws.ToBool(metal.BareMetal), metal.Hypervisor)
	}
	_, err := c.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: []types.InstanceType{"x9.huge"}})
	wantCode(t, err, "InvalidInstanceType", 400)
	_, err = c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{"i-00000000000000000"}})
	wantCode(t, err, "InvalidInstanceID.NotFound", 400)

	if free := subnetFree(t, c); free != 4096-5-1 {
		t.Fatalf("subnet free: want %d, got %d", 4096-5-1, free)
	}
	if sim.State().SubnetFree != 4090 {
		t.Fatalf("State().SubnetFree = %d", sim.State().SubnetFree)
	}
}

func TestDescribeInstanceTypesPaginates(t *testing.T) {
	_, url := startSim(t, Config{})
	c := ec2Client(t, url, false)
	p := ec2.NewDescribeInstanceTypesPaginator(c, &ec2.DescribeInstanceTypesInput{MaxResults: aws.Int32(100)})
	seen := map[types.InstanceType]bool{}
	for p.HasMorePages() {
		for _, it := range must[*ec2.DescribeInstanceTypesOutput](t)(p.NextPage(ctx)).InstanceTypes {
			seen[it.InstanceType] = true
		}
	}
	table, _ := instanceTypes()
	if len(seen) != len(table) {
		t.Fatalf("paginated %d types, table has %d", len(seen), len(table))
	}
}

func TestENILifecycle(t *testing.T) {
	sim, url := startSim(t, Config{InstanceType: "m5.large"})
	c := ec2Client(t, url, false)
	instanceID := sim.State().InstanceID

	eni := createENI(t, c, sim, &ec2.CreateNetworkInterfaceInput{
		Description: aws.String("aws-K8S-" + instanceID), Groups: []string{"sg-0123456789abcdef0"},
		SecondaryPrivateIpAddressCount: aws.Int32(2),
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeNetworkInterface,
			Tags: []types.Tag{{Key: aws.String("node.k8s.amazonaws.com/instance_id"), Value: aws.String(instanceID)}}}},
	})
	id := aws.ToString(eni.NetworkInterfaceId)
	if len(id) != len("eni-0")+16 || aws.ToString(eni.MacAddress)[:3] != "02:" || len(eni.PrivateIpAddresses) != 3 {
		t.Fatalf("created: %s %s %+v", id, aws.ToString(eni.MacAddress), eni.PrivateIpAddresses)
	}
	if got := aws.ToString(eni.PrivateIpAddress); got != "100.64.0.5" {
		t.Fatalf("primary: want the lowest free address 100.64.0.5, got %s", got)
	}
	if free := subnetFree(t, c); free != 4090-3 {
		t.Fatalf("free after create: %d", free)
	}

	attachID := attachENI(t, c, sim, id, 1)
	must[*ec2.ModifyNetworkInterfaceAttributeOutput](t)(c.ModifyNetworkInterfaceAttribute(ctx,
		&ec2.ModifyNetworkInterfaceAttributeInput{NetworkInterfaceId: aws.String(id),
			Attachment: &types.NetworkInterfaceAttachmentChanges{AttachmentId: aws.String(attachID), DeleteOnTermination: aws.Bool(true)}}))
	desc := must[*ec2.DescribeNetworkInterfacesOutput](t)(c.DescribeNetworkInterfaces(ctx,
		&ec2.DescribeNetworkInterfacesInput{NetworkInterfaceIds: []string{id}})).NetworkInterfaces[0]
	if desc.Status != types.NetworkInterfaceStatusInUse || aws.ToInt32(desc.Attachment.DeviceIndex) != 1 ||
		!aws.ToBool(desc.Attachment.DeleteOnTermination) || aws.ToString(desc.Attachment.InstanceId) != instanceID ||
		aws.ToString(desc.TagSet[0].Value) != instanceID {
		t.Fatalf("described: %+v %+v", desc, desc.Attachment)
	}

	as := must[*ec2.AssignPrivateIpAddressesOutput](t)(c.AssignPrivateIpAddresses(ctx, &ec2.AssignPrivateIpAddressesInput{
		NetworkInterfaceId: aws.String(id), SecondaryPrivateIpAddressCount: aws.Int32(2)}))
	if len(as.AssignedPrivateIpAddresses) != 2 || aws.ToString(as.AssignedPrivateIpAddresses[0].PrivateIpAddress) != "100.64.0.8" {
		t.Fatalf("assigned: %+v", as.AssignedPrivateIpAddresses)
	}
	must[*ec2.UnassignPrivateIpAddressesOutput](t)(c.UnassignPrivateIpAddresses(ctx, &ec2.UnassignPrivateIpAddressesInput{
		NetworkInterfaceId: aws.String(id), PrivateIpAddresses: []string{"100.64.0.6"}}))
	_, err := c.UnassignPrivateIpAddresses(ctx, &ec2.UnassignPrivateIpAddressesInput{
		NetworkInterfaceId: aws.String(id), PrivateIpAddresses: []string{"100.64.0.6"}})
	wantCode(t, err, "InvalidParameterValue", 400)
	st := stateENI(t, sim, id)
	if want := []netip.Addr{netip.MustParseAddr("100.64.0.7"), netip.MustParseAddr("100.64.0.8"),
		netip.MustParseAddr("100.64.0.9")}; !slices.Equal(st.Secondary, want) || st.Status != "in-use" || !st.DeleteOnTermination {
		t.Fatalf("state: %+v", st)
	}

	_, err = c.DeleteNetworkInterface(ctx, &ec2.DeleteNetworkInterfaceInput{NetworkInterfaceId: aws.String(id)})
	wantCode(t, err, "InvalidParameterValue", 400) // "is currently in use", as EC2 says it
	must[*ec2.DetachNetworkInterfaceOutput](t)(c.DetachNetworkInterface(ctx, &ec2.DetachNetworkInterfaceInput{
		AttachmentId: aws.String(attachID), Force: aws.Bool(true)}))
	if st := stateENI(t, sim, id); st.Status != "available" || st.DeviceIndex != -1 {
		t.Fatalf("after detach: %+v", st)
	}
	must[*ec2.DeleteNetworkInterfaceOutput](t)(c.DeleteNetworkInterface(ctx, &ec2.DeleteNetworkInterfaceInput{NetworkInterfaceId: aws.String(id)}))
	_, err = c.DeleteNetworkInterface(ctx, &ec2.DeleteNetworkInterfaceInput{NetworkInterfaceId: aws.String(id)})
	wantCode(t, err, "InvalidNetworkInterfaceID.NotFound", 400)
	if free := subnetFree(t, c); free != 4090 {
		t.Fatalf("free after delete: %d", free)
	}
	primary := sim.State().ENIs[0]
	_, err = c.DetachNetworkInterface(ctx, &ec2.DetachNetworkInterfaceInput{AttachmentId: aws.String(primary.AttachmentID)})
	wantCode(t, err, "OperationNotPermitted", 400)
}

func stateENI(t *testing.T, sim *Sim, id string) ENI {
	t.Helper()
	for _, e := range sim.State().ENIs {
		if e.ID == id {
			return e
		}
	}
	t.Fatalf("ENI %s not in state", id)
	return ENI{}
}

func TestDescribeNetworkInterfacesPaginatorAndFilters(t *testing.T) {
	sim, url := startSim(t, Config{})
	c := ec2Client(t, url, false)
	made := map[string]bool{}
	for i := range 12 {
		tags := []types.Tag{{Key: aws.String("cluster.k8s.amazonaws.com/name"), Value: aws.String("demo")}}
		if i%2 == 0 {
			tags = append(tags, types.Tag{Key: aws.String("even"), Value: aws.String("yes")})
		}
		eni := createENI(t, c, sim, &ec2.CreateNetworkInterfaceInput{Description: aws.String("aws-K8S-x"),
			TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeNetworkInterface, Tags: tags}}})
		made[aws.ToString(eni.NetworkInterfaceId)] = true
	}
	in := &ec2.DescribeNetworkInterfacesInput{MaxResults: aws.Int32(5), Filters: []types.Filter{
		{Name: aws.String("tag-key"), Values: []string{"cluster.k8s.amazonaws.com/name"}},
		{Name: aws.String("status"), Values: []string{"available"}},
		{Name: aws.String("vpc-id"), Values: []string{sim.State().VPCID}}}}
	p := ec2.NewDescribeNetworkInterfacesPaginator(c, in)
	seen, pages := map[string]bool{}, 0
	for p.HasMorePages() {
		out := must[*ec2.DescribeNetworkInterfacesOutput](t)(p.NextPage(ctx))
		pages++
		for _, ni := range out.NetworkInterfaces {
			seen[aws.ToString(ni.NetworkInterfaceId)] = true
		}
	}
	if pages != 3 || len(seen) != 12 || !mapsEqual(seen, made) {
		t.Fatalf("pages %d, seen %d of %d", pages, len(seen), len(made))
	}

	count := func(filters ...types.Filter) int {
		out := must[*ec2.DescribeNetworkInterfacesOutput](t)(c.DescribeNetworkInterfaces(ctx,
			&ec2.DescribeNetworkInterfacesInput{Filters: filters}))
		return len(out.NetworkInterfaces)
	}
	f := func(name string, values ...string) types.Filter {
		return types.Filter{Name: aws.String(name), Values: values}
	}
	cases := []struct {
		name string
		got  int
		want int
	}{
		{"tag:even", count(f("tag:even", "yes")), 6},
		{"attachment.instance-id", count(f("attachment.instance-id", sim.State().InstanceID)), 1},
		{"description wildcard", count(f("description", "aws-K8S-*")), 12},
		{"two values OR", count(f("status", "in-use", "available")), 13},
		{"filters AND", count(f("status", "in-use"), f("tag-key", "even")), 0},
		{"subnet-id", count(f("subnet-id", sim.State().SubnetID)), 13},
		{"no match", count(f("tag:cluster.k8s.amazonaws.com/name", "other")), 0},
	}
	for _, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("%s: want %d, got %d", tc.name, tc.want, tc.got)
		}
	}

	_, err := c.DescribeNetworkInterfaces(ctx, &ec2.DescribeNetworkInterfacesInput{
		NetworkInterfaceIds: []string{sim.State().ENIs[0].ID}, MaxResults: aws.Int32(5)})
	wantCode(t, err, "InvalidParameterCombination", 400)
	_, err = c.DescribeNetworkInterfaces(ctx, &ec2.DescribeNetworkInterfacesInput{NextToken: aws.String("bogus")})
	wantCode(t, err, "InvalidNextToken", 400)
	_, err = c.DescribeNetworkInterfaces(ctx, &ec2.DescribeNetworkInterfacesInput{Filters: []types.Filter{f("colour", "red")}})
	wantCode(t, err, "InvalidParameterValue", 400)
	_, err = c.DescribeNetworkInterfaces(ctx, &ec2.DescribeNetworkInterfacesInput{NetworkInterfaceIds: []string{"eni-00000000000000000"}})
	wantCode(t, err, "InvalidNetworkInterfaceID.NotFound", 400)
}

func mapsEqual(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

func TestClientTokenIdempotency(t *testing.T) {
	sim, url := startSim(t, Config{})
	c := ec2Client(t, url, false)
	in := &ec2.CreateNetworkInterfaceInput{SubnetId: aws.String(sim.State().SubnetID), SecondaryPrivateIpAddressCount: aws.Int32(1)}
	first := createENI(t, c, sim, in) // the SDK fills in.ClientToken and keeps it
	second := createENI(t, c, sim, in)
	if aws.ToString(in.ClientToken) == "" || aws.ToString(first.NetworkInterfaceId) != aws.ToString(second.NetworkInterfaceId) {
		t.Fatalf("replay made a different ENI: %s vs %s", aws.ToString(first.NetworkInterfaceId), aws.ToString(second.NetworkInterfaceId))
	}
	if n := len(sim.State().ENIs); n != 2 {
		t.Fatalf("want the primary and one ENI, got %d", n)
	}
	in.SecondaryPrivateIpAddressCount = aws.Int32(2)
	_, err := c.CreateNetworkInterface(ctx, in)
	wantCode(t, err, "IdempotentParameterMismatch", 400)
}

func TestTags(t *testing.T) {
	sim, url := startSim(t, Config{})
	c := ec2Client(t, url, false)
	id := aws.ToString(createENI(t, c, sim, &ec2.CreateNetworkInterfaceInput{}).NetworkInterfaceId)
	must[*ec2.CreateTagsOutput](t)(c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id},
		Tags: []types.Tag{{Key: aws.String("a"), Value: aws.String("1")}, {Key: aws.String("b"), Value: aws.String("")}}}))
	must[*ec2.DeleteTagsOutput](t)(c.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: []string{id},
		Tags: []types.Tag{{Key: aws.String("a")}}}))
	if tags := stateENI(t, sim, id).Tags; len(tags) != 1 || tags["b"] != "" {
		t.Fatalf("tags: %v", tags)
	}
	_, err := c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id},
		Tags: []types.Tag{{Key: aws.String("aws:x"), Value: aws.String("1")}}})
	wantCode(t, err, "InvalidTagKey.Malformed", 400)
	_, err = c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{"eni-00000000000000000"},
		Tags: []types.Tag{{Key: aws.String("k"), Value: aws.String("v")}}})
	wantCode(t, err, "InvalidNetworkInterfaceID.NotFound", 400)
}
