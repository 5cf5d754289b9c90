package whatif

import (
	"net/netip"
	"testing"

	"vpc-cni/pool"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// Custom networking turned on under a node whose primary ENI holds free
// secondary addresses: the what-if node's ADD, as the plugin's, hands out
// none of them even before a pass has seen the knob, and the next pods get
// addresses of the pod subnet, on an ENI past the primary.
func TestTakeUnderCustomNetworkingLeavesThePrimaryENI(t *testing.T) {
	pointAtEmulators(t)
	env := map[string]string{"WARM_IP_TARGET": "2", "RELEASE_DELAY": "120"}
	n, err := newNode(env, Options{InstanceType: "t3.small"})
	if err != nil {
		t.Fatal(err)
	}
	defer n.close()
	if _, err := n.pass(false, NewAccount()); err != nil {
		t.Fatal(err)
	}
	if idle, _, err := n.idle(); err != nil || idle != 2 {
		t.Fatalf("before custom networking the primary ENI holds %d free addresses (%v), want 2", idle, err)
	}
	podCIDR := netip.MustParsePrefix("100.100.0.0/20")
	n.sim.AssociateVPCCIDR(netip.MustParsePrefix("100.100.0.0/16"))
	podSubnet, err := n.sim.AddSubnet(podCIDR, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var node store.Node
	if err := n.st.View(func(tx *store.Tx) (err error) { node, _, err = tx.Node(); return err }); err != nil {
		t.Fatal(err)
	}
	env[settings.CustomNetworkCfg] = "true"
	env[settings.ENIConfigKey(node.AZ)] = "subnet=" + podSubnet

	if ok, _, err := n.take("pod1/eth0", pool.DefaultPool); err != nil {
		t.Fatal(err)
	} else if ok {
		a := assignment(t, n, "pod1/eth0")
		t.Fatalf("custom networking on: the ADD took %s on device %d; want no address of the primary ENI", a.IP, a.DeviceIndex)
	}
	for range 5 {
		if ok, _, err := n.take("pod1/eth0", pool.DefaultPool); err != nil {
			t.Fatal(err)
		} else if ok {
			break
		}
		if _, err := n.pass(true, NewAccount()); err != nil {
			t.Fatal(err)
		}
	}
	a := assignment(t, n, "pod1/eth0")
	if a.DeviceIndex < 1 || !podCIDR.Contains(a.IP) {
		t.Fatalf("after the grow pass the pod has %s on device %d; want an address of %s past the primary ENI",
			a.IP, a.DeviceIndex, podCIDR)
	}
}

func assignment(t *testing.T, n *node, key string) store.Assignment {
	t.Helper()
	var a store.Assignment
	var ok bool
	err := n.st.View(func(tx *store.Tx) (err error) { a, ok, err = tx.Assignment(key); return err })
	if err != nil || !ok {
		t.Fatalf("assignment %s: found %v, %v", key, ok, err)
	}
	return a
}

// The cooldown is the one resolved now, not the last pass's: an address
// given back under a cooldown of 0 and then a longer one stays cooling.
func TestTakeUsesTheCooldownResolvedNow(t *testing.T) {
	pointAtEmulators(t)
	env := map[string]string{"WARM_IP_TARGET": "2", "IP_COOLDOWN_PERIOD": "0"}
	n, err := newNode(env, Options{InstanceType: "t3.small"})
	if err != nil {
		t.Fatal(err)
	}
	defer n.close()
	if _, err := n.pass(false, NewAccount()); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := n.take("pod1/eth0", pool.DefaultPool); err != nil || !ok {
		t.Fatalf("first ADD: took %v, %v", ok, err)
	}
	first := assignment(t, n, "pod1/eth0").IP
	if err := n.give("pod1/eth0"); err != nil {
		t.Fatal(err)
	}
	env["IP_COOLDOWN_PERIOD"] = "3600"
	if ok, _, err := n.take("pod2/eth0", pool.DefaultPool); err != nil || !ok {
		t.Fatalf("second ADD: took %v, %v", ok, err)
	}
	if got := assignment(t, n, "pod2/eth0").IP; got == first {
		t.Fatalf("the second pod got %s, given back a moment ago and cooling for an hour", got)
	}
}
