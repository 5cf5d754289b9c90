package cloud

import (
	"fmt"
	"testing"

	"vpc-cni/sim/ec2sim"
)

// TaggedGroups reads every page of the VPC's groups carrying the tag (one
// DescribeSecurityGroups a page), sorted by ID, with their tags.
func TestTaggedGroupsReadsEveryPage(t *testing.T) {
	sim := startSim(t, ec2sim.Config{})
	for i := range 7 {
		if _, err := sim.AddSecurityGroup(fmt.Sprint("pay-", i), map[string]string{"team": "payments"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sim.AddSecurityGroup("web", map[string]string{"team": "web"}); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, Options{PageSize: 5})
	sim.ResetCounters()
	groups, err := c.TaggedGroups(testCtx(t), sim.State().VPCID, "team", []string{"payments"})
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 7 || sim.Counters()["DescribeSecurityGroups"] != 2 {
		t.Fatalf("%d groups in %d calls, want 7 in 2", len(groups), sim.Counters()["DescribeSecurityGroups"])
	}
	for i, g := range groups {
		if g.Tags["team"] != "payments" || g.VPCID != sim.State().VPCID || i > 0 && groups[i-1].ID >= g.ID {
			t.Fatalf("group %d: %+v (sorted by ID?)", i, g)
		}
	}
	none, err := c.TaggedGroups(testCtx(t), sim.State().VPCID, "team", []string{"nobody"})
	if err != nil || len(none) != 0 {
		t.Fatalf("no group tagged so: %+v %v", none, err)
	}
}
