package reconcile

import (
	"net/netip"
	"testing"
	"time"

	"vpc-cni/sim/ec2sim"
)

// Turning custom networking on under a node whose primary ENI already holds
// secondary addresses: the pods move to ENIs in the pod subnet, and the
// primary's addresses, free, go back to EC2 once the release delay passed.
func TestCustomNetworkingReturnsThePrimaryENIsAddresses(t *testing.T) {
	sim, podSubnet := customNetworkingSim(t)
	e := env{"WARM_IP_TARGET": "2", "RELEASE_DELAY": "120"}
	n := attachNode(t, sim, t.TempDir(), e)
	n.converge(5)
	if got := primarySecondaries(n); got != 2 {
		t.Fatalf("before custom networking the primary holds %d secondary addresses, want 2", got)
	}
	e["AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG"] = "true"
	e[zoneKey(n)] = "subnet=" + podSubnet
	n.converge(5)
	if got := primarySecondaries(n); got != 2 {
		t.Fatalf("released %d of the primary's addresses before the release delay", 2-got)
	}
	n.clock.Advance(121 * time.Second)
	n.converge(5)
	if got := primarySecondaries(n); got != 0 {
		t.Fatalf("the primary ENI still holds %d secondary addresses in EC2; want them released", got)
	}
	wantENIsIn(t, n, podSubnet, podCIDR, primaryGroups(n))
	checkAgrees(t, n.sim, n.st)
}

var podCIDR = netip.MustParsePrefix("100.100.0.0/20")

// customNetworkingSim is a t3.small node whose VPC has a secondary CIDR with
// a pod subnet in it.
func customNetworkingSim(t *testing.T) (*ec2sim.Sim, string) {
	sim := startSimConfig(t, ec2sim.Config{InstanceType: "t3.small"})
	sim.AssociateVPCCIDR(netip.MustParsePrefix("100.100.0.0/16"))
	podSubnet, err := sim.AddSubnet(podCIDR, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	return sim, podSubnet
}

func primarySecondaries(n *node) int {
	for _, e := range n.sim.State().ENIs {
		if e.DeviceIndex == 0 {
			got := 0
			for _, ip := range e.Secondary {
				if ip != e.PrimaryIP {
					got++
				}
			}
			return got
		}
	}
	n.t.Fatal("no primary ENI")
	return 0
}
