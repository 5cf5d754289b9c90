package cloud

import (
	"slices"
	"testing"
)

func TestForClusterFollowsTheReferencesClusterTags(t *testing.T) {
	const own = "subnet-own"
	subnets := []Subnet{
		{ID: own, Tags: map[string]string{ClusterSubnetTagPrefix + "other": "1"}},
		{ID: "subnet-shared", Tags: map[string]string{CNISubnetTag: "1"}},
		{ID: "subnet-prod", Tags: map[string]string{CNISubnetTag: "1", ClusterSubnetTagPrefix + "prod": ""}},
		{ID: "subnet-other", Tags: map[string]string{CNISubnetTag: "1", ClusterSubnetTagPrefix + "other": "1"}},
		{ID: "subnet-both", Tags: map[string]string{CNISubnetTag: "1", ClusterSubnetTagPrefix + "other": "1", ClusterSubnetTagPrefix + "prod": "1"}},
		{ID: "subnet-lb", Tags: map[string]string{CNISubnetTag: "1", "kubernetes.io/cluster/other": "owned"}},
	}
	ids := func(ss []Subnet) []string {
		var out []string
		for _, s := range ss {
			out = append(out, s.ID)
		}
		return out
	}
	for _, c := range []struct {
		cluster string
		want    []string
	}{
		{"", ids(subnets)},
		{"prod", []string{own, "subnet-shared", "subnet-prod", "subnet-both", "subnet-lb"}},
		{"other", []string{own, "subnet-shared", "subnet-other", "subnet-both", "subnet-lb"}},
		{"third", []string{own, "subnet-shared", "subnet-lb"}},
	} {
		if got := ids(ForCluster(subnets, own, c.cluster)); !slices.Equal(got, c.want) {
			t.Errorf("CLUSTER_NAME=%q: %v; want %v", c.cluster, got, c.want)
		}
	}
	if len(subnets) != 6 {
		t.Fatal("ForCluster changed its argument")
	}
}
