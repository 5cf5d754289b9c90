package reconcile

import (
	"net/netip"
	"testing"

	"vpc-cni/cloud"
)

// With CLUSTER_NAME set, subnet discovery skips a subnet tagged for another
// cluster although it has the most free addresses, and grows in one tagged
// for this cluster.
func TestSubnetDiscoveryKeepsToThisClustersSubnets(t *testing.T) {
	n := newNode(t, "t3.small", env{"WARM_ENI_TARGET": "1", "CLUSTER_NAME": "prod"})
	ours, err := n.sim.AddSubnet(taggedCIDR, "", map[string]string{cloud.CNISubnetTag: "1", cloud.ClusterSubnetTagPrefix + "prod": "1"})
	if err != nil {
		t.Fatal(err)
	}
	big := netip.MustParsePrefix("100.64.32.0/19") // more free than the /24
	if _, err := n.sim.AddSubnet(big, "", map[string]string{cloud.CNISubnetTag: "1", cloud.ClusterSubnetTagPrefix + "other": "1"}); err != nil {
		t.Fatal(err)
	}
	n.sim.SetSubnetFree(0)
	n.converge(5)
	wantENIsIn(t, n, ours, taggedCIDR, primaryGroups(n))
}
