package cloud

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"vpc-cni/pool"
	"vpc-cni/sim/ec2sim"
)

func TestInstanceLimits(t *testing.T) {
	startSim(t, ec2sim.Config{InstanceType: "m5.large"})
	c := newClient(t, Options{})
	lim, info, err := c.InstanceLimits(testCtx(t), "m5.large")
	if err != nil {
		t.Fatal(err)
	}
	if lim != (pool.Limits{MaxENIs: 3, IPv4PerENI: 10}) || !info.PrefixDelegation || info.InstanceType != "m5.large" {
		t.Fatalf("m5.large: limits %+v info %+v", lim, info)
	}
	_, _, err = c.InstanceLimits(testCtx(t), "x9.nonexistent")
	if err == nil {
		t.Fatal("unknown instance type: want an error")
	}
}

func TestSubnet(t *testing.T) {
	sim := startSim(t, ec2sim.Config{})
	c := newClient(t, Options{})
	st := sim.State()
	sub, err := c.Subnet(testCtx(t), st.SubnetID)
	if err != nil {
		t.Fatal(err)
	}
	if sub.CIDR != netip.MustParsePrefix("100.64.0.0/20") || sub.Available != st.SubnetFree || sub.VPCID != st.VPCID {
		t.Fatalf("Subnet = %+v, sim state %+v", sub, st)
	}
	_, err = c.Subnet(testCtx(t), "subnet-0000000000000000f")
	wantKind(t, err, KindNotFound)
}

// TestENILifecycle walks one ENI through everything reconcile does to it.
func TestENILifecycle(t *testing.T) {
	sim := startSim(t, ec2sim.Config{InstanceType: "m5.large"})
	c := newClient(t, Options{ClusterName: "prod", UserAgent: "vpc-cni/test"})
	ctx := testCtx(t)
	st := sim.State()
	created := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

	eni, err := c.CreateENI(ctx, CreateENIRequest{SubnetID: st.SubnetID, InstanceID: st.InstanceID, Count: 2,
		ClientToken: "intent-1", Now: created, Tags: map[string]string{"team": "net"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(eni.Secondary) != 2 || !eni.PrimaryIP.IsValid() || eni.Attached || eni.DeviceIndex != -1 {
		t.Fatalf("created ENI %+v", eni)
	}
	wantTags := map[string]string{TagInstanceID: st.InstanceID, TagCreatedAt: "2026-11-30T10:00:00Z",
		TagClusterName: "prod", TagOwner: TagOwnerValue, "team": "net"}
	got := simENI(t, sim, eni.ID)
	for k, v := range wantTags {
		if got.Tags[k] != v || eni.Tags[k] != v {
			t.Errorf("tag %s: sim %q, returned %q, want %q", k, got.Tags[k], eni.Tags[k], v)
		}
	}
	if got.Description != "aws-K8S-"+st.InstanceID || !eni.CreatedAt.Equal(created) {
		t.Errorf("description %q createdAt %v", got.Description, eni.CreatedAt)
	}

	attachID, err := c.AttachENI(ctx, eni.ID, st.InstanceID, 1)
	if err != nil || attachID == "" {
		t.Fatalf("AttachENI: %q %v", attachID, err)
	}
	if err := c.SetDeleteOnTermination(ctx, eni.ID, attachID); err != nil {
		t.Fatal(err)
	}
	enis, err := c.InstanceENIs(ctx, st.InstanceID)
	if err != nil {
		t.Fatal(err)
	}
	if len(enis) != 2 || enis[0].DeviceIndex != 0 || enis[1].ID != eni.ID || enis[1].DeviceIndex != 1 ||
		!enis[1].Attached || !enis[1].DeleteOnTermination || enis[1].AttachmentID != attachID {
		t.Fatalf("InstanceENIs = %+v", enis)
	}

	added, err := c.AssignAddresses(ctx, eni.ID, 3, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(added) != 3 || added[0].Bits() != 32 {
		t.Fatalf("AssignAddresses = %v", added)
	}
	if err := c.UnassignAddresses(ctx, eni.ID, added[:2]); err != nil {
		t.Fatal(err)
	}
	after := simENI(t, sim, eni.ID)
	if len(after.Secondary) != 3 || slices.Contains(after.Secondary, added[0].Addr()) ||
		!slices.Contains(after.Secondary, added[2].Addr()) {
		t.Fatalf("after unassign: secondaries %v (unassigned %v)", after.Secondary, added[:2])
	}

	if err := c.TagENI(ctx, eni.ID, map[string]string{"extra": "1"}); err != nil {
		t.Fatal(err)
	}
	if simENI(t, sim, eni.ID).Tags["extra"] != "1" {
		t.Fatal("TagENI did not tag")
	}

	if err := c.DetachENI(ctx, attachID, false); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteENI(ctx, eni.ID); err != nil {
		t.Fatalf("DeleteENI after detach: %v", err)
	}
	if err := c.DeleteENI(ctx, eni.ID); err != nil {
		t.Fatalf("DeleteENI of a deleted ENI must be success: %v", err)
	}
	if err := c.DetachENI(ctx, attachID, true); err != nil {
		t.Fatalf("DetachENI of a gone attachment must be success: %v", err)
	}
	if n := len(sim.State().ENIs); n != 1 {
		t.Fatalf("sim has %d ENIs after delete, want 1", n)
	}
}

func TestPrefixes(t *testing.T) {
	sim := startSim(t, ec2sim.Config{InstanceType: "m5.large"})
	c := newClient(t, Options{})
	ctx := testCtx(t)
	st := sim.State()
	eni, err := c.CreateENI(ctx, CreateENIRequest{SubnetID: st.SubnetID, InstanceID: st.InstanceID, Count: 1, Prefixes: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(eni.Prefixes) != 1 || eni.Prefixes[0].Bits() != 28 || len(eni.Secondary) != 0 {
		t.Fatalf("created ENI prefixes %v secondaries %v", eni.Prefixes, eni.Secondary)
	}
	added, err := c.AssignAddresses(ctx, eni.ID, 2, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(added) != 2 || added[0].Bits() != 28 || added[1].Bits() != 28 {
		t.Fatalf("AssignAddresses(prefixes) = %v", added)
	}
	// One call per kind: a /32 and a /28 together.
	ip, err := c.AssignAddresses(ctx, eni.ID, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	sim.ResetCounters()
	if err := c.UnassignAddresses(ctx, eni.ID, append(ip, added[0])); err != nil {
		t.Fatal(err)
	}
	got := simENI(t, sim, eni.ID)
	if len(got.Prefixes) != 2 || slices.Contains(got.Prefixes, added[0]) || len(got.Secondary) != 0 {
		t.Fatalf("after unassign: prefixes %v secondaries %v", got.Prefixes, got.Secondary)
	}
	if n := sim.Counters()["UnassignPrivateIpAddresses"]; n != 2 {
		t.Fatalf("UnassignPrivateIpAddresses calls = %d, want 2 (one per kind)", n)
	}
	if got := (ENIInfo{Secondary: []netip.Addr{netip.MustParseAddr("100.64.0.9")}, Prefixes: got.Prefixes}).Blocks(); len(got) != 3 {
		t.Fatalf("Blocks = %v", got)
	}
}

func TestClientTokenReplayReturnsSameENI(t *testing.T) {
	sim := startSim(t, ec2sim.Config{})
	c := newClient(t, Options{})
	ctx := testCtx(t)
	st := sim.State()
	req := CreateENIRequest{SubnetID: st.SubnetID, InstanceID: st.InstanceID, Count: 1, ClientToken: "intent-42",
		Now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	first, err := c.CreateENI(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	second, err := c.CreateENI(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if first.ID != second.ID || len(sim.State().ENIs) != 2 {
		t.Fatalf("replay made ENI %s after %s; sim has %d ENIs", second.ID, first.ID, len(sim.State().ENIs))
	}
}

// TestPagination pins that one logical describe reads every page.
func TestPagination(t *testing.T) {
	sim := startSim(t, ec2sim.Config{InstanceType: "c5.18xlarge"})
	c := newClient(t, Options{PageSize: 5})
	ctx := testCtx(t)
	st := sim.State()
	old := time.Now().Add(-time.Hour)
	for i := 1; i <= 7; i++ {
		eni, err := c.CreateENI(ctx, CreateENIRequest{SubnetID: st.SubnetID, InstanceID: st.InstanceID, Now: old})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.AttachENI(ctx, eni.ID, st.InstanceID, i); err != nil {
			t.Fatal(err)
		}
	}
	for range 11 {
		if _, err := c.CreateENI(ctx, CreateENIRequest{SubnetID: st.SubnetID, InstanceID: "i-0ffffffffffffffff", Now: old}); err != nil {
			t.Fatal(err)
		}
	}
	sim.ResetCounters()
	enis, err := c.InstanceENIs(ctx, st.InstanceID)
	if err != nil {
		t.Fatal(err)
	}
	if len(enis) != 8 || sim.Counters()["DescribeNetworkInterfaces"] != 2 {
		t.Fatalf("InstanceENIs: %d ENIs in %d calls, want 8 in 2", len(enis), sim.Counters()["DescribeNetworkInterfaces"])
	}
	for i, e := range enis {
		if e.DeviceIndex != i {
			t.Fatalf("InstanceENIs not ordered by device index: %d at %d", e.DeviceIndex, i)
		}
	}
	leaked, err := c.LeakedENIs(ctx, st.VPCID, "i-0ffffffffffffffff", 5*time.Minute, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(leaked) != 11 {
		t.Fatalf("LeakedENIs = %d ENIs, want 11", len(leaked))
	}
}

func TestLeakedENIs(t *testing.T) {
	sim := startSim(t, ec2sim.Config{})
	ctx := testCtx(t)
	st := sim.State()
	now := time.Now()
	mine := newClient(t, Options{ClusterName: "prod"})
	other := newClient(t, Options{ClusterName: "staging"})
	mk := func(c *Client, age time.Duration) ENIInfo {
		e, err := c.CreateENI(ctx, CreateENIRequest{SubnetID: st.SubnetID, InstanceID: "i-0aaaaaaaaaaaaaaaa", Now: now.Add(-age)})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	oldOne := mk(mine, time.Hour)
	mk(mine, time.Minute) // too young
	mk(other, time.Hour)  // another cluster
	attached := mk(mine, time.Hour)
	if _, err := mine.AttachENI(ctx, attached.ID, st.InstanceID, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := mine.CreateENI(ctx, CreateENIRequest{SubnetID: st.SubnetID, InstanceID: "i-0bbbbbbbbbbbbbbbb", Now: now.Add(-time.Hour)}); err != nil {
		t.Fatal(err) // another node's
	}
	noDate := mk(mine, time.Hour)
	if err := mine.TagENI(ctx, noDate.ID, map[string]string{TagCreatedAt: "yesterday"}); err != nil {
		t.Fatal(err)
	}

	leaked, err := mine.LeakedENIs(ctx, st.VPCID, "i-0aaaaaaaaaaaaaaaa", 5*time.Minute, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(leaked) != 1 || leaked[0].ID != oldOne.ID {
		t.Fatalf("LeakedENIs = %+v, want only %s", leaked, oldOne.ID)
	}
	if got := simENI(t, sim, noDate.ID).Tags[TagCreatedAt]; got != now.UTC().Format(time.RFC3339) {
		t.Fatalf("ENI without a valid createdAt: tag is %q, want it stamped with now", got)
	}
}
