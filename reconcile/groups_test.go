package reconcile

import (
	"slices"
	"testing"

	"vpc-cni/cloud"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// secondaryGroups lists the groups of every secondary ENI in EC2.
func secondaryGroups(n *node) map[string][]string {
	out := map[string][]string{}
	for _, e := range n.sim.State().ENIs {
		if e.DeviceIndex > 0 {
			out[e.ID] = e.Groups
		}
	}
	return out
}

func storedGroups(n *node) []string {
	var node store.Node
	if err := n.st.View(func(tx *store.Tx) (err error) { node, _, err = tx.Node(); return err }); err != nil {
		n.t.Fatal(err)
	}
	return node.SecurityGroups
}

// setPrimaryGroups changes the primary ENI's groups in EC2, as an operator
// would, through the SDK.
func setPrimaryGroups(n *node, groups []string) {
	n.t.Helper()
	var primary string
	for _, e := range n.sim.State().ENIs {
		if e.DeviceIndex == 0 {
			primary = e.ID
		}
	}
	if err := n.r.Cloud.(*cloud.Client).SetENIGroups(ctxFor(n.t), primary, groups); err != nil {
		n.t.Fatal(err)
	}
}

// When the primary ENI's security groups change, the next pass moves every
// secondary ENI of ours to them (one Modify per ENI, none when they agree),
// and ENIs created later carry them too.
func TestSecondaryENIsFollowThePrimaryENIsGroups(t *testing.T) {
	e := env{"WARM_IP_TARGET": "5"}
	n := newNode(t, "t3.small", e)
	n.converge(5)
	before := secondaryGroups(n)
	if len(before) != 1 {
		t.Fatalf("want one secondary ENI, have %v", before)
	}
	changed := []string{"sg-0ccccccccccccccc3", "sg-0ddddddddddddddd4"}
	setPrimaryGroups(n, changed)

	n.sim.ResetCounters()
	n.pass()
	if got := n.sim.Counters()["ModifyNetworkInterfaceAttribute"]; got != 1 {
		t.Errorf("%d ModifyNetworkInterfaceAttribute calls; want 1, for the one secondary ENI", got)
	}
	for id, g := range secondaryGroups(n) {
		if !slices.Equal(g, changed) {
			t.Errorf("ENI %s has groups %v; want the primary's %v", id, g, changed)
		}
	}
	if !slices.Equal(storedGroups(n), changed) {
		t.Errorf("the store keeps %v for new ENIs; want %v", storedGroups(n), changed)
	}

	n.sim.ResetCounters()
	n.pass()
	if c := n.sim.Counters(); c["ModifyNetworkInterfaceAttribute"] != 0 || c["DescribeNetworkInterfaces"] != 0 {
		t.Errorf("a pass with the groups in place made calls: %v", c)
	}

	e["WARM_IP_TARGET"] = "8"
	n.converge(5)
	for id, g := range secondaryGroups(n) {
		if !slices.Equal(g, changed) {
			t.Errorf("ENI %s has groups %v; want the primary's %v", id, g, changed)
		}
	}
}

// Under custom networking the configured groups apply: a change to the
// primary ENI's groups moves no ENI.
func TestCustomNetworkingENIsKeepTheirConfiguredGroups(t *testing.T) {
	sim, podSubnet := customNetworkingSim(t)
	e := env{"WARM_IP_TARGET": "2", "AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG": "true"}
	n := attachNode(t, sim, t.TempDir(), e)
	configured := []string{"sg-0aaaaaaaaaaaaaaa1"}
	e[settings.ENIConfigKey(sim.State().AZ)] = "subnet=" + podSubnet + ",securityGroups=" + configured[0]
	n.converge(5)
	setPrimaryGroups(n, []string{"sg-0ccccccccccccccc3"})
	n.sim.ResetCounters()
	n.converge(5)
	if got := n.sim.Counters()["ModifyNetworkInterfaceAttribute"]; got != 0 {
		t.Errorf("%d ModifyNetworkInterfaceAttribute calls under custom networking; want 0", got)
	}
	for id, g := range secondaryGroups(n) {
		if !slices.Equal(g, configured) {
			t.Errorf("ENI %s has groups %v; want the configured %v", id, g, configured)
		}
	}
}
