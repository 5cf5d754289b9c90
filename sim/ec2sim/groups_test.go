package ec2sim

import (
	"fmt"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// DescribeSecurityGroups through the real SDK: the VPC's groups with their
// tags, the vpc-id and tag:<key> filters (values ORed, filters ANDed), pages
// of MaxResults with the SDK's paginator, and EC2's refusals.
func TestDescribeSecurityGroupsFiltersByTagAndPages(t *testing.T) {
	sim, url := startSim(t, Config{})
	c := ec2Client(t, url, false)
	var pay []string
	for i := range 7 {
		id := must[string](t)(sim.AddSecurityGroup(fmt.Sprintf("pay-%d", i), map[string]string{"team": "payments", "n": fmt.Sprint(i)}))
		pay = append(pay, id)
	}
	web := must[string](t)(sim.AddSecurityGroup("web", map[string]string{"team": "web"}))
	if _, err := sim.AddSecurityGroup("web", nil); err == nil {
		t.Fatal("a second group named web was created")
	}
	vpc := sim.State().VPCID

	byTag := func(values ...string) []types.SecurityGroup {
		t.Helper()
		var out []types.SecurityGroup
		pages := ec2.NewDescribeSecurityGroupsPaginator(c, &ec2.DescribeSecurityGroupsInput{
			Filters: []types.Filter{{Name: aws.String("vpc-id"), Values: []string{vpc}},
				{Name: aws.String("tag:team"), Values: values}},
			MaxResults: aws.Int32(5),
		})
		n := 0
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(page.SecurityGroups) > 5 {
				t.Fatalf("a page of %d groups, MaxResults 5", len(page.SecurityGroups))
			}
			out = append(out, page.SecurityGroups...)
			n++
		}
		if want := (len(out) + 4) / 5; n != max(want, 1) {
			t.Fatalf("%d groups in %d pages", len(out), n)
		}
		return out
	}
	got := byTag("payments")
	var ids []string
	for _, g := range got {
		ids = append(ids, aws.ToString(g.GroupId))
		if aws.ToString(g.VpcId) != vpc || !hasTag(g.Tags, "team", "payments") || aws.ToString(g.GroupName) == "" {
			t.Fatalf("group %+v", g)
		}
	}
	if !slices.Equal(ids, pay) {
		t.Fatalf("tag:team=payments gave %v, want %v", ids, pay)
	}
	if got := byTag("payments", "web"); len(got) != 8 || aws.ToString(got[7].GroupId) != web {
		t.Fatalf("tag:team=payments|web gave %d groups", len(got))
	}
	if got := byTag("nobody"); len(got) != 0 {
		t.Fatalf("tag:team=nobody gave %+v", got)
	}

	// The default group (the primary ENI's) is there too, and other VPCs' are not.
	all, err := c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{})
	if err != nil || len(all.SecurityGroups) != 9 || aws.ToString(all.NextToken) != "" {
		t.Fatalf("all groups: %d, next %q, %v", len(all.SecurityGroups), aws.ToString(all.NextToken), err)
	}
	other, err := c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{
		Filters: []types.Filter{{Name: aws.String("vpc-id"), Values: []string{"vpc-0000000000000000f"}}}})
	if err != nil || len(other.SecurityGroups) != 0 {
		t.Fatalf("another VPC's groups: %+v %v", other.SecurityGroups, err)
	}
	one, err := c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{web}})
	if err != nil || len(one.SecurityGroups) != 1 || aws.ToString(one.SecurityGroups[0].GroupName) != "web" {
		t.Fatalf("by ID: %+v %v", one.SecurityGroups, err)
	}

	// Tags set later through CreateTags are seen by the filter.
	if _, err := c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{web},
		Tags: []types.Tag{{Key: aws.String("team"), Value: aws.String("payments")}}}); err != nil {
		t.Fatal(err)
	}
	if got := byTag("payments"); len(got) != 8 {
		t.Fatalf("after tagging web: %d groups", len(got))
	}

	_, err = c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{"sg-0123456789abcdef0"}})
	wantCode(t, err, "InvalidGroup.NotFound", 400)
	_, err = c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{"web"}})
	wantCode(t, err, "InvalidGroupId.Malformed", 400)
	_, err = c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{MaxResults: aws.Int32(4)})
	wantCode(t, err, "InvalidParameterValue", 400)
	_, err = c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{
		Filters: []types.Filter{{Name: aws.String("colour"), Values: []string{"red"}}}})
	wantCode(t, err, "InvalidParameterValue", 400)
	_, err = c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{NextToken: aws.String("bogus")})
	wantCode(t, err, "InvalidNextToken", 400)
}

// An ENI's answers name its groups by their names, in EC2 and in IMDS.
func TestAnENIsGroupsCarryTheirNames(t *testing.T) {
	sim, url := startSim(t, Config{})
	web := must[string](t)(sim.AddSecurityGroup("web", nil))
	c := ec2Client(t, url, false)
	out, err := c.CreateNetworkInterface(ctx, &ec2.CreateNetworkInterfaceInput{
		SubnetId: aws.String(sim.State().SubnetID), Groups: []string{web, "sg-00000901"}})
	if err != nil {
		t.Fatal(err)
	}
	g := out.NetworkInterface.Groups
	if len(g) != 2 || aws.ToString(g[0].GroupName) != "web" || aws.ToString(g[1].GroupName) != "sg-00000901" {
		t.Fatalf("groups %+v", g)
	}
}

func hasTag(tags []types.Tag, k, v string) bool {
	return slices.ContainsFunc(tags, func(t types.Tag) bool { return aws.ToString(t.Key) == k && aws.ToString(t.Value) == v })
}
