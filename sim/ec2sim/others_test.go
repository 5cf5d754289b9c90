package ec2sim

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

func intPtr(n int) *int { return &n }

// A node as EKS builds them: a trunk, an efa-only ENI, a user's ENI on card
// 1 tagged no_manage, a branch ENI; all made by another party, all seen
// through the real SDK as EC2 renders them.
func TestAnotherPartysENIsThroughTheSDK(t *testing.T) {
	sim, url := startSim(t, Config{InstanceType: "c6in.32xlarge"}) // 2 network cards in the table
	c := ec2Client(t, url, false)
	trunk := must[ENI](t)(sim.AddENI(ENISpec{Type: TypeTrunk, Description: "aws-k8s-trunk-eni"}))
	efaOnly := must[ENI](t)(sim.AddENI(ENISpec{Type: TypeEFAOnly, Card: 1}))
	user := must[ENI](t)(sim.AddENI(ENISpec{Card: 1, Device: intPtr(3), Secondary: 2, Description: "storage",
		Tags: map[string]string{"node.k8s.amazonaws.com/no_manage": "true"}}))
	branch := must[ENI](t)(sim.AddENI(ENISpec{Type: TypeBranch}))
	if n := len(sim.Counters()); n != 0 {
		t.Fatalf("another party's ENIs moved the call counters: %v", sim.Counters())
	}
	out := must[*ec2.DescribeNetworkInterfacesOutput](t)(c.DescribeNetworkInterfaces(ctx, &ec2.DescribeNetworkInterfacesInput{
		NetworkInterfaceIds: []string{trunk.ID, efaOnly.ID, user.ID, branch.ID}}))
	got := map[string]types.NetworkInterface{}
	for _, ni := range out.NetworkInterfaces {
		got[aws.ToString(ni.NetworkInterfaceId)] = ni
	}
	check := func(id string, typ types.NetworkInterfaceType, card int32, device int32, attached bool) types.NetworkInterface {
		t.Helper()
		ni := got[id]
		if ni.InterfaceType != typ || (ni.Attachment != nil) != attached {
			t.Fatalf("%s: type %q attachment %+v", id, ni.InterfaceType, ni.Attachment)
		}
		if attached && (aws.ToInt32(ni.Attachment.NetworkCardIndex) != card || aws.ToInt32(ni.Attachment.DeviceIndex) != device) {
			t.Fatalf("%s: card %d device %d, want %d %d", id, aws.ToInt32(ni.Attachment.NetworkCardIndex),
				aws.ToInt32(ni.Attachment.DeviceIndex), card, device)
		}
		return ni
	}
	if ni := check(trunk.ID, types.NetworkInterfaceTypeTrunk, 0, 1, true); aws.ToString(ni.Description) != "aws-k8s-trunk-eni" {
		t.Errorf("trunk description %q", aws.ToString(ni.Description))
	}
	if ni := check(efaOnly.ID, types.NetworkInterfaceTypeEfaOnly, 1, 0, true); ni.PrivateIpAddress != nil || len(ni.PrivateIpAddresses) != 0 {
		t.Errorf("efa-only ENI has IPv4: %v %v", aws.ToString(ni.PrivateIpAddress), ni.PrivateIpAddresses)
	}
	ni := check(user.ID, types.NetworkInterfaceTypeInterface, 1, 3, true)
	if len(ni.PrivateIpAddresses) != 3 || len(ni.TagSet) != 1 || aws.ToString(ni.TagSet[0].Key) != "node.k8s.amazonaws.com/no_manage" ||
		aws.ToString(ni.TagSet[0].Value) != "true" {
		t.Errorf("user ENI: addresses %d tags %v", len(ni.PrivateIpAddresses), ni.TagSet)
	}
	if ni := check(branch.ID, types.NetworkInterfaceTypeBranch, 0, 0, false); ni.Status != types.NetworkInterfaceStatusInUse {
		t.Errorf("branch status %q", ni.Status)
	}
	filtered := must[*ec2.DescribeNetworkInterfacesOutput](t)(c.DescribeNetworkInterfaces(ctx, &ec2.DescribeNetworkInterfacesInput{
		Filters: []types.Filter{{Name: aws.String("interface-type"), Values: []string{"trunk"}}}}))
	if len(filtered.NetworkInterfaces) != 1 || aws.ToString(filtered.NetworkInterfaces[0].NetworkInterfaceId) != trunk.ID {
		t.Errorf("interface-type=trunk: %d ENIs", len(filtered.NetworkInterfaces))
	}
}

func TestAnotherPartysENIsInIMDS(t *testing.T) {
	sim, url := startSim(t, Config{InstanceType: "c6in.32xlarge"})
	c := imdsClient(url)
	onCard1 := must[ENI](t)(sim.AddENI(ENISpec{Card: 1, Secondary: 1}))
	efaOnly := must[ENI](t)(sim.AddENI(ENISpec{Type: TypeEFAOnly}))
	branch := must[ENI](t)(sim.AddENI(ENISpec{Type: TypeBranch}))
	dir := "network/interfaces/macs/" + onCard1.MAC + "/"
	if got := getMeta(t, c, dir+"network-card"); got != "1" {
		t.Errorf("network-card = %q", got)
	}
	if got := getMeta(t, c, dir+"network-card-index"); got != "1" {
		t.Errorf("network-card-index = %q", got)
	}
	if got := getMeta(t, c, dir+"device-number"); got != "0" {
		t.Errorf("device-number on card 1 = %q", got)
	}
	keys := getMeta(t, c, "network/interfaces/macs/"+efaOnly.MAC+"/")
	if strings.Contains(keys, "local-ipv4s") || !strings.Contains(keys, "network-card") {
		t.Errorf("efa-only keys: %q", keys)
	}
	if macs := getMeta(t, c, "network/interfaces/macs/"); strings.Contains(macs, branch.MAC) {
		t.Errorf("a branch ENI is listed in IMDS: %q", macs)
	}
}

func TestCreateNetworkInterfaceTypesAndTags(t *testing.T) {
	sim, url := startSim(t, Config{InstanceType: "m5.large"})
	c := ec2Client(t, url, false)
	eni := createENI(t, c, sim, &ec2.CreateNetworkInterfaceInput{InterfaceType: types.NetworkInterfaceCreationTypeTrunk,
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeNetworkInterface,
			Tags: []types.Tag{{Key: aws.String("owner"), Value: aws.String("vpc-rc")}}}}})
	if eni.InterfaceType != types.NetworkInterfaceTypeTrunk || len(eni.TagSet) != 1 {
		t.Fatalf("create answered type %q tags %v", eni.InterfaceType, eni.TagSet)
	}
	if st := stateENI(t, sim, aws.ToString(eni.NetworkInterfaceId)); st.InterfaceType != TypeTrunk || st.Tags["owner"] != "vpc-rc" {
		t.Fatalf("state: %+v", st)
	}
	subnet := aws.String(sim.State().SubnetID)
	_, err := c.CreateNetworkInterface(ctx, &ec2.CreateNetworkInterfaceInput{SubnetId: subnet, InterfaceType: "bogus"})
	wantCode(t, err, "InvalidParameterValue", 400)
	_, err = c.CreateNetworkInterface(ctx, &ec2.CreateNetworkInterfaceInput{SubnetId: subnet,
		InterfaceType: types.NetworkInterfaceCreationTypeEfaOnly, SecondaryPrivateIpAddressCount: aws.Int32(1)})
	wantCode(t, err, "InvalidParameterCombination", 400)
	branch := createENI(t, c, sim, &ec2.CreateNetworkInterfaceInput{InterfaceType: types.NetworkInterfaceCreationTypeBranch})
	_, err = c.AttachNetworkInterface(ctx, &ec2.AttachNetworkInterfaceInput{NetworkInterfaceId: branch.NetworkInterfaceId,
		InstanceId: aws.String(sim.State().InstanceID), DeviceIndex: aws.Int32(1)})
	wantCode(t, err, "InvalidParameterValue", 400)
}

// AddENI keeps EC2's rules: the ENI limit, a taken device index, an unknown
// card; a refused attach leaves no ENI and no address behind.
func TestAddENIFollowsEC2Rules(t *testing.T) {
	sim, _ := startSim(t, Config{InstanceType: "t3.small"}) // 3 ENIs, 1 card
	free := sim.State().SubnetFree
	cases := []struct {
		spec ENISpec
		want string
	}{
		{ENISpec{Device: intPtr(0)}, "InvalidParameterValue"},
		{ENISpec{Card: 1}, "networkCardIndex"},
		{ENISpec{Type: "ena"}, "interfaceType"},
		{ENISpec{Type: TypeEFAOnly, Secondary: 1}, "InvalidParameterCombination"},
		{ENISpec{Secondary: 9}, "PrivateIpAddressLimitExceeded"},
		{ENISpec{Tags: map[string]string{"aws:x": "y"}}, "InvalidTagKey.Malformed"},
	}
	for _, c := range cases {
		if _, err := sim.AddENI(c.spec); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v, want one naming %s", c.spec, err, c.want)
		}
	}
	if st := sim.State(); len(st.ENIs) != 1 || st.SubnetFree != free {
		t.Fatalf("refused AddENIs left %d ENIs, free %d (was %d)", len(st.ENIs), st.SubnetFree, free)
	}
	must[ENI](t)(sim.AddENI(ENISpec{}))
	must[ENI](t)(sim.AddENI(ENISpec{}))
	if _, err := sim.AddENI(ENISpec{}); err == nil || !strings.Contains(err.Error(), "AttachmentLimitExceeded") {
		t.Fatalf("a fourth ENI on t3.small: %v", err)
	}
	detached := must[ENI](t)(sim.AddENI(ENISpec{Detached: true, Description: "leaked?"}))
	if detached.Status != "available" || detached.DeviceIndex != -1 {
		t.Fatalf("detached: %+v", detached)
	}
}

func TestAddENIOverTheControlAPI(t *testing.T) {
	sim, url := startSim(t, Config{InstanceType: "m5.large"})
	body := `{"type":"efa","secondary":2,"description":"ml","tags":{"team":"ml"}}`
	resp, err := http.Post(url+"/_sim/enis", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got ENI
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != 200 {
		t.Fatalf("status %d: %v", resp.StatusCode, err)
	}
	if st := stateENI(t, sim, got.ID); st.InterfaceType != TypeEFA || len(st.Secondary) != 2 || st.Tags["team"] != "ml" ||
		st.DeviceIndex != 1 {
		t.Fatalf("state: %+v", st)
	}
	for _, bad := range []string{`{"type":"ena"}`, `{"secondry":2}`, `not json`} {
		resp, err := http.Post(url+"/_sim/enis", "application/json", bytes.NewReader([]byte(bad)))
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || len(msg) == 0 {
			t.Errorf("%s: status %d %q", bad, resp.StatusCode, msg)
		}
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen within %v", what, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// With a link delay, IMDS lists a new ENI only once its link is made, and
// never before the delay has passed since the attach.
func TestLinkDelayHidesTheENIFromIMDS(t *testing.T) {
	sim, url := startSim(t, Config{InstanceType: "m5.large"})
	const delay = 500 * time.Millisecond
	sim.SetFaults(Faults{LinkDelay: delay})
	c := imdsClient(url)
	start := time.Now()
	eni := must[ENI](t)(sim.AddENI(ENISpec{}))
	macs := getMeta(t, c, "network/interfaces/macs/")
	if time.Since(start) < delay && (strings.Contains(macs, eni.MAC) || stateENI(t, sim, eni.ID).Linked) {
		t.Fatalf("listed before its link: %q", macs)
	}
	waitFor(t, "the link", 30*time.Second, func() bool { return stateENI(t, sim, eni.ID).Linked })
	if since := time.Since(start); since < delay {
		t.Fatalf("linked %v after the attach, before the %v delay", since, delay)
	}
	if macs := getMeta(t, c, "network/interfaces/macs/"); !strings.Contains(macs, eni.MAC) {
		t.Fatalf("linked but not listed: %q", macs)
	}
	if err := sim.LinkError(); err != nil {
		t.Fatal(err)
	}
	var f Faults
	b, _ := json.Marshal(Faults{LinkDelay: 3 * time.Second})
	if err := json.Unmarshal(b, &f); err != nil || f.LinkDelay != 3*time.Second || !strings.Contains(string(b), `"linkDelay":"3s"`) {
		t.Fatalf("linkDelay JSON %s -> %+v %v", b, f, err)
	}
}
