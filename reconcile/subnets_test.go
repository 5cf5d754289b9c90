package reconcile

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"vpc-cni/cloud"
	"vpc-cni/settings"
	"vpc-cni/sim/ec2sim"
	"vpc-cni/store"
)

var taggedCIDR = netip.MustParsePrefix("100.64.64.0/24")

// exhaustedNode is a t3.small whose own subnet has no free address, with a
// subnet of its zone tagged for subnet discovery.
func exhaustedNode(t *testing.T, e env) (*node, string) {
	n := newNode(t, "t3.small", e)
	tagged, err := n.sim.AddSubnet(taggedCIDR, "", map[string]string{cloud.CNISubnetTag: "1"})
	if err != nil {
		t.Fatal(err)
	}
	n.sim.SetSubnetFree(0)
	return n, tagged
}

// wantENIsIn fails unless every secondary ENI of the node is in subnet, with
// the primary ENI's security groups, and the store knows the subnet's CIDR.
func wantENIsIn(t *testing.T, n *node, subnet string, cidr netip.Prefix, groups []string) {
	t.Helper()
	st := n.sim.State()
	secondaries := 0
	for _, e := range st.ENIs {
		if e.DeviceIndex <= 0 {
			continue
		}
		secondaries++
		if e.SubnetID != subnet || !cidr.Contains(e.PrimaryIP) || !slices.Equal(e.Groups, groups) {
			t.Errorf("ENI %s: subnet %s (%s), groups %v; want %s (%s), groups %v", e.ID, e.SubnetID, e.PrimaryIP,
				e.Groups, subnet, cidr, groups)
		}
	}
	if secondaries == 0 {
		t.Fatalf("no secondary ENI: %+v", st.ENIs)
	}
	for _, e := range n.snapshot().ENIs {
		if !e.Primary() && e.SubnetCIDR != cidr {
			t.Errorf("the store has ENI %s in %s, want %s", e.ID, e.SubnetCIDR, cidr)
		}
	}
}

func primaryGroups(n *node) []string {
	for _, e := range n.sim.State().ENIs {
		if e.DeviceIndex == 0 {
			return e.Groups
		}
	}
	return nil
}

// With the node's subnet exhausted, growth goes on in the tagged subnet in
// the same pass, pods get its addresses, and the node is not backed off.
func TestSubnetDiscoveryGrowsInTheTaggedSubnet(t *testing.T) {
	n, tagged := exhaustedNode(t, env{"WARM_ENI_TARGET": "1"})
	rep := n.pass()
	if snap := n.snapshot(); snap.GrowBlockedUntil.After(n.clock.Now()) {
		t.Fatalf("the node is backed off (%s) though the tagged subnet has room; calls %v", snap.GrowBlockedWhy, rep.Calls)
	}
	n.converge(5)
	wantENIsIn(t, n, tagged, taggedCIDR, primaryGroups(n))
	for range 4 {
		a, err := n.addPod()
		if err != nil {
			n.pass()
			if a, err = n.addPod(); err != nil {
				t.Fatalf("no address after a pass: %v", err)
			}
		}
		if !taggedCIDR.Contains(a.IP) {
			t.Errorf("pod got %s, not from the tagged subnet %s", a.IP, taggedCIDR)
		}
	}
	n.converge(5)
	wantENIsIn(t, n, tagged, taggedCIDR, primaryGroups(n))
	checkAgrees(t, n.sim, n.st)
}

// ENABLE_SUBNET_DISCOVERY=false looks for no other subnet: the node backs off.
func TestSubnetDiscoveryOffBacksOff(t *testing.T) {
	n, _ := exhaustedNode(t, env{"WARM_ENI_TARGET": "1", "ENABLE_SUBNET_DISCOVERY": "false"})
	if _, err := n.r.Run(ctxFor(t), Options{}); !cloud.IsKind(err, cloud.KindSubnetFull) {
		t.Fatalf("want a subnet-full error, got %v", err)
	}
	if snap := n.snapshot(); !snap.GrowBlockedUntil.After(n.clock.Now()) {
		t.Fatal("no back-off with discovery off")
	}
	if c := n.sim.Counters()["DescribeSubnets"]; c != 0 {
		t.Errorf("%d DescribeSubnets with discovery off", c)
	}
}

// ENABLE_SUBNET_DISCOVERY=true places every new ENI in the subnet with the
// most free addresses, the node's own included: one DescribeSubnets per
// pass that creates ENIs.
func TestSubnetDiscoveryAlwaysTakesTheMostFree(t *testing.T) {
	n := newNode(t, "t3.small", env{"WARM_IP_TARGET": "5", "ENABLE_SUBNET_DISCOVERY": "true"})
	big := netip.MustParsePrefix("100.64.32.0/19") // more free than the node's /20
	id, err := n.sim.AddSubnet(big, "", map[string]string{cloud.CNISubnetTag: "1"})
	if err != nil {
		t.Fatal(err)
	}
	n.converge(5)
	wantENIsIn(t, n, id, big, primaryGroups(n))
	if c := n.sim.Counters()["DescribeSubnets"]; c != 1 {
		t.Errorf("%d DescribeSubnets; want 1 (one pass created ENIs)", c)
	}
}

// A pass killed after the create (or the attach) leaves an intent that the
// next pass repairs in the same subnet: the replay with the same token and
// subnet returns that ENI, nothing leaks.
func TestCrashRepairsIntoTheDiscoveredSubnet(t *testing.T) {
	for _, cp := range []string{cpCreated, cpAttached} {
		t.Run(cp, func(t *testing.T) {
			n, tagged := exhaustedNode(t, env{"WARM_ENI_TARGET": "1", "IP_COOLDOWN_PERIOD": "1s", "RELEASE_DELAY": "2s"})
			n.converge(5) // ENI 1 in the tagged subnet
			for range 2 {
				if _, err := n.addPod(); err != nil {
					t.Fatal(err)
				}
			}
			killedAt(t, n, cp) // the pass creating ENI 2 dies
			var intents []store.Intent
			_ = n.st.View(func(tx *store.Tx) (err error) { intents, err = tx.Intents(); return err })
			if len(intents) != 1 || intents[0].SubnetID != tagged || intents[0].SubnetCIDR != taggedCIDR {
				t.Fatalf("intents %+v; want one create in %s", intents, tagged)
			}
			n.clock.Advance(time.Second)
			rep := n.pass()
			t.Logf("repair pass: calls %v, failed %v", rep.Calls, rep.Failed)
			n.converge(5)
			checkAgrees(t, n.sim, n.st)
			wantENIsIn(t, n, tagged, taggedCIDR, primaryGroups(n))
			for _, e := range n.sim.State().ENIs {
				if e.DeviceIndex < 0 {
					t.Errorf("ENI %s leaked (detached)", e.ID)
				}
			}
		})
	}
}

// Custom networking: ENIs go to the zone's configured subnet (in a
// secondary VPC CIDR) with the configured groups; the primary ENI gets no
// secondary address and gives none to pods; max pods follows the formula.
func TestCustomNetworkingUsesTheZonesSubnetAndGroups(t *testing.T) {
	sim := startSimConfig(t, ec2sim.Config{InstanceType: "t3.small"})
	second := netip.MustParsePrefix("100.100.0.0/16")
	sim.AssociateVPCCIDR(second)
	podCIDR := netip.MustParsePrefix("100.100.0.0/20")
	podSubnet, err := sim.AddSubnet(podCIDR, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	groups := []string{"sg-0aaaaaaaaaaaaaaa1", "sg-0bbbbbbbbbbbbbbb2"}
	e := env{"WARM_IP_TARGET": "2", "AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG": "true"}
	n := attachNode(t, sim, t.TempDir(), e)
	if _, err := n.r.Run(ctxFor(t), Options{}); err == nil || !IsConfigError(err) {
		t.Fatalf("custom networking without the zone's line: %v; want a config error", err)
	}
	e[zoneKey(n)] = "subnet=" + podSubnet + ",securityGroups=" + groups[0] + ";" + groups[1]
	rep := n.pass()
	if rep.Plan.Figures.MaxPods != 2*3+2 {
		t.Errorf("max pods %d; want (3-1)*(4-1)+2 = 8", rep.Plan.Figures.MaxPods)
	}
	n.converge(5)
	wantENIsIn(t, n, podSubnet, podCIDR, groups)
	for _, en := range n.sim.State().ENIs {
		if en.DeviceIndex == 0 && len(en.Secondary) > 0 {
			t.Errorf("the primary ENI got secondary addresses %v", en.Secondary)
		}
	}
	for range 5 {
		a, err := n.addPod()
		if err != nil {
			n.pass()
			if a, err = n.addPod(); err != nil {
				t.Fatalf("no address after a pass: %v", err)
			}
		}
		if !podCIDR.Contains(a.IP) || a.DeviceIndex == 0 {
			t.Errorf("pod got %s on device %d; want the pod subnet %s on a secondary ENI", a.IP, a.DeviceIndex, podCIDR)
		}
	}
	checkAgrees(t, n.sim, n.st)
}

func zoneKey(n *node) string {
	var node store.Node
	_ = n.st.View(func(tx *store.Tx) (err error) { node, _, err = tx.Node(); return err })
	if node.AZ == "" {
		n.t.Fatal("the node was not learnt")
	}
	return settings.ENIConfigKey(node.AZ)
}
