package whatif

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"vpc-cni/pool"
	"vpc-cni/settings"
)

// A node with a network profile: the what-if node's ADD takes as the
// plugin's does, so a pod of the profile gets no address of the default
// pool, and after the grow pass one on the profile's own ENI in the
// profile's subnet, while a pod of the default pool stays in the node's.
func TestAProfilePodGetsItsProfilesENIAndSubnet(t *testing.T) {
	pointAtEmulators(t)
	env := map[string]string{"WARM_IP_TARGET": "2"}
	n, err := newNode(env, Options{InstanceType: "t3.medium"})
	if err != nil {
		t.Fatal(err)
	}
	defer n.close()
	goldCIDR := netip.MustParsePrefix("100.100.0.0/20")
	n.sim.AssociateVPCCIDR(netip.MustParsePrefix("100.100.0.0/16"))
	gold, err := n.sim.AddSubnet(goldCIDR, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	env[settings.ProfileKey("gold", settings.ProfileSubnets)] = gold
	if _, err := n.pass(false, NewAccount()); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := n.take("web/eth0", pool.DefaultPool); err != nil || !ok {
		t.Fatalf("a pod of the default pool: took %v, %v", ok, err)
	}
	if a := assignment(t, n, "web/eth0"); a.Profile != pool.DefaultPool || goldCIDR.Contains(a.IP) {
		t.Fatalf("the default pool's pod got %s of pool %q", a.IP, a.Profile)
	}
	for range 5 {
		ok, _, err := n.take("pay/eth0", "gold")
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			break
		}
		if err := n.wait("pay/eth0", "gold", true); err != nil {
			t.Fatal(err)
		}
		if _, err := n.pass(true, NewAccount()); err != nil {
			t.Fatal(err)
		}
	}
	a := assignment(t, n, "pay/eth0")
	if a.Profile != "gold" || a.DeviceIndex < 1 || !goldCIDR.Contains(a.IP) {
		t.Fatalf("the gold pod has %s on device %d of pool %q; want an address of gold's subnet %s on gold's ENI",
			a.IP, a.DeviceIndex, a.Profile, goldCIDR)
	}
}

// A trace's add may name the pod's profile; a del names the pod alone.
func TestATraceNamesAPodsProfile(t *testing.T) {
	w, err := ReadTrace(strings.NewReader("0 add web\n1 add pay gold\n5 del pay\n"), "t")
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Pods) != 2 || w.Pods[0].Pool != pool.DefaultPool || w.Pods[1].Pool != "gold" || w.Pods[1].Leave == 0 {
		t.Fatalf("pods %+v; want web of the default pool, pay of gold leaving at 5s", w.Pods)
	}
	if _, err := ReadTrace(strings.NewReader("0 add web\n1 del web gold\n"), "t"); err == nil {
		t.Fatal("a del naming a profile was read")
	}
}

// The cluster's node model takes as the plugin does too: a pod of a profile
// waits for a grow pass that plans the profile's pool, then holds an
// address of the profile's own ENI, never one of the default pool's.
func TestTheModelServesAProfilePod(t *testing.T) {
	env := map[string]string{"WARM_IP_TARGET": "2", settings.ProfileKey("gold", settings.ProfileSubnets): "subnet-0gold"}
	n, err := newModelNode("i-0model", env, Options{InstanceType: "t3.medium"})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if ok, _, err := n.take("pay/eth0", "gold"); err != nil || ok {
			if err != nil {
				t.Fatal(err)
			}
			break
		}
		if err := n.wait("pay/eth0", "gold", true); err != nil {
			t.Fatal(err)
		}
		if _, err := n.pass(true, NewAccount()); err != nil {
			t.Fatal(err)
		}
		n.clock.t = n.clock.t.Add(time.Minute) // the new ENI's host side is set up
		n.setupHosts()
	}
	var held []string
	for _, e := range n.snap.ENIs {
		for _, b := range e.Blocks {
			for _, a := range b.Addrs {
				if a.Owner == "pay/eth0" {
					held = append(held, fmt.Sprintf("%s of pool %q on device %d", a.IP, e.Profile, e.DeviceIndex))
				}
			}
		}
	}
	if len(held) != 1 || !strings.Contains(held[0], `pool "gold"`) {
		t.Fatalf("the gold pod holds %v; want one address of gold's ENI", held)
	}
	if ok, _, err := n.take("web/eth0", pool.DefaultPool); err != nil {
		t.Fatalf("a pod of the default pool: %v, %v", ok, err)
	}
}
