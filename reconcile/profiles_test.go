package reconcile

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"vpc-cni/pool"
	"vpc-cni/settings"
	"vpc-cni/sim/ec2sim"
	"vpc-cni/store"
)

var (
	goldCIDR = netip.MustParsePrefix("100.64.80.0/24")
	blueCIDR = netip.MustParsePrefix("100.64.90.0/24")
)

// profilesNode is a t3.medium (3 ENIs) with gold (sg-00000901, its subnet by
// ID, WARM_IP_TARGET=2) and blue (sg-00000902, a subnet by tag) configured.
func profilesNode(t *testing.T) (n *node, goldSubnet, blueSubnet string) {
	n = newNode(t, "t3.medium", env{})
	var err error
	if goldSubnet, err = n.sim.AddSubnet(goldCIDR, "", nil); err != nil {
		t.Fatal(err)
	}
	if blueSubnet, err = n.sim.AddSubnet(blueCIDR, "", map[string]string{"tier": "blue"}); err != nil {
		t.Fatal(err)
	}
	n.env["PROFILE_GOLD_SECURITY_GROUPS"] = "sg-00000901"
	n.env["PROFILE_GOLD_SUBNETS"] = goldSubnet
	n.env["PROFILE_GOLD_WARM_IP_TARGET"] = "2"
	n.env["PROFILE_BLUE_SECURITY_GROUPS"] = "sg-00000902"
	n.env["PROFILE_BLUE_SUBNETS"] = "tag:tier=blue"
	n.r.Names = n.env.names
	return n, goldSubnet, blueSubnet
}

func (e env) names() []string {
	var out []string
	for k := range e {
		out = append(out, k)
	}
	return out
}

// profileENIs is the emulator's ENIs tagged with profile.
func profileENIs(n *node, profile string) []ec2sim.ENI {
	var out []ec2sim.ENI
	for _, e := range n.sim.State().ENIs {
		if e.Tags[settings.ProfileTag] == profile {
			out = append(out, e)
		}
	}
	return out
}

func TestEachProfileGetsENIsWithItsGroupsInItsSubnets(t *testing.T) {
	n, goldSubnet, blueSubnet := profilesNode(t)
	n.converge(5)
	for _, c := range []struct {
		profile, subnet string
		cidr            netip.Prefix
		groups          []string
	}{{"gold", goldSubnet, goldCIDR, []string{"sg-00000901"}}, {"blue", blueSubnet, blueCIDR, []string{"sg-00000902"}}} {
		enis := profileENIs(n, c.profile)
		if len(enis) != 1 {
			t.Fatalf("%s: %d ENIs in EC2, want 1: %+v", c.profile, len(enis), n.sim.State().ENIs)
		}
		e := enis[0]
		if e.SubnetID != c.subnet || !c.cidr.Contains(e.PrimaryIP) || !slices.Equal(e.Groups, c.groups) || e.DeviceIndex < 1 {
			t.Fatalf("%s's ENI: subnet %s, %s, groups %v, device %d", c.profile, e.SubnetID, e.PrimaryIP, e.Groups, e.DeviceIndex)
		}
	}
	var defaults int
	for _, e := range n.snapshot().ENIs {
		tagged := ""
		for _, s := range n.sim.State().ENIs {
			if s.ID == e.ID {
				tagged = s.Tags[settings.ProfileTag]
			}
		}
		if string(e.Profile) != tagged {
			t.Fatalf("the store has %s in pool %q, EC2 tags it %q", e.ID, e.Profile, tagged)
		}
		if e.Profile == "" {
			defaults++
		}
	}
	if defaults != 1 {
		t.Fatalf("%d ENIs in the default pool, want the primary", defaults)
	}
	checkAgrees(t, n.sim, n.st)
}

func TestAProfilesAddressesGoToItsPodsOnly(t *testing.T) {
	n, _, _ := profilesNode(t)
	n.converge(5)
	gold := profileENIs(n, "gold")[0]
	var a store.Assignment
	err := n.st.Update(func(tx *store.Tx) (err error) {
		a, err = tx.Take(store.Assignment{Key: "g/eth0"}, n.clock.Now(), pool.Config{Cooldown: n.cooldown(), Profile: "gold"})
		return err
	})
	if err != nil || a.ENIID != gold.ID {
		t.Fatalf("gold's pod: %+v %v, want an address on %s", a, err, gold.ID)
	}
	for range 5 { // the primary's 5 addresses, then none: never gold's or blue's
		if d, err := n.addPod(); err == nil && d.ENIID != n.sim.State().ENIs[0].ID {
			t.Fatalf("a default pod got %s on %s", d.IP, d.ENIID)
		}
	}
}

// An ENI whose groups change behind vpc-cni's back is found (IMDS at rest,
// then EC2), reported, gets no new pods, and the pool grows elsewhere; its
// groups restored, it serves again.
func TestAProfileENIWhoseGroupsChangeIsReportedAndNotUsed(t *testing.T) {
	n, _, _ := profilesNode(t) // 3 ENIs of 3: the primary, gold's, blue's
	n.converge(5)
	gold := profileENIs(n, "gold")[0]
	if err := n.r.Cloud.SetENIGroups(ctxFor(t), gold.ID, []string{"sg-00000666"}); err != nil {
		t.Fatal(err)
	}
	rep := n.pass()
	if !strings.Contains(rep.Observed, "other security groups") {
		t.Fatalf("the pass read %q, want EC2 for the changed groups", rep.Observed)
	}
	if !hasFinding(rep.Findings, "profile-groups-drift", gold.ID) {
		t.Fatalf("findings %+v, want the drift of %s", rep.Findings, gold.ID)
	}
	for _, e := range n.snapshot().ENIs {
		if e.ID == gold.ID && !strings.Contains(e.GroupsDrift, "sg-00000666") {
			t.Fatalf("stored drift of %s: %q", e.ID, e.GroupsDrift)
		}
	}
	err := n.st.Update(func(tx *store.Tx) error {
		a, err := tx.Take(store.Assignment{Key: "g/eth0"}, n.clock.Now(), pool.Config{Cooldown: n.cooldown(), Profile: "gold"})
		if err == nil && a.ENIID == gold.ID {
			t.Fatalf("a gold pod got %s on the drifted %s", a.IP, gold.ID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// No slot for another ENI: the drifted one, holding nothing, goes once
	// the release delay has passed, and gold gets a new one in its place.
	n.converge(5)
	n.clock.Advance(10 * time.Minute)
	n.converge(5)
	if got := profileENIs(n, "gold"); len(got) != 1 || got[0].ID == gold.ID || !slices.Equal(got[0].Groups, []string{"sg-00000901"}) {
		t.Fatalf("gold's ENIs %+v; want the drifted one replaced by one with gold's groups", got)
	}
}

// The primary ENI's groups change: the default pool's ENIs follow them, a
// profile's keep the profile's.
func TestProfileENIsDoNotFollowThePrimarysGroups(t *testing.T) {
	n, _, _ := profilesNode(t)
	delete(n.env, "PROFILE_BLUE_SECURITY_GROUPS") // blue goes: a slot for a default secondary ENI
	delete(n.env, "PROFILE_BLUE_SUBNETS")
	n.env["WARM_ENI_TARGET"] = "2"
	n.converge(5)
	primary := n.sim.State().ENIs[0]
	if err := n.r.Cloud.SetENIGroups(ctxFor(t), primary.ID, []string{"sg-00000777"}); err != nil {
		t.Fatal(err)
	}
	n.converge(5)
	followers := 0
	for _, e := range n.sim.State().ENIs {
		if e.DeviceIndex > 0 && e.Tags[settings.ProfileTag] == "" {
			followers++
		}
		want := []string{"sg-00000777"}
		if e.Tags[settings.ProfileTag] == "gold" {
			want = []string{"sg-00000901"}
		}
		if !slices.Equal(e.Groups, want) && e.Tags[settings.ProfileTag] != "blue" {
			t.Errorf("ENI %s (profile %q): groups %v, want %v", e.ID, e.Tags[settings.ProfileTag], e.Groups, want)
		}
	}
	if followers == 0 {
		t.Fatalf("no default secondary ENI to follow the primary: %+v", n.sim.State().ENIs)
	}
}

// A state file lost and rebuilt from EC2 knows each ENI's profile by its tag.
func TestARebuiltStateKnowsTheProfilesByTheirTags(t *testing.T) {
	n, _, _ := profilesNode(t)
	n.converge(5)
	fresh := attachNode(t, n.sim, t.TempDir(), n.env)
	fresh.r.Names = n.env.names
	fresh.clock.Advance(time.Hour)
	fresh.converge(5)
	want := map[string]string{}
	for _, e := range n.sim.State().ENIs {
		want[e.ID] = e.Tags[settings.ProfileTag]
	}
	for _, e := range fresh.snapshot().ENIs {
		if string(e.Profile) != want[e.ID] {
			t.Fatalf("rebuilt: %s in pool %q, its tag says %q", e.ID, e.Profile, want[e.ID])
		}
	}
	if got := len(n.sim.State().ENIs); got != 3 {
		t.Fatalf("the rebuilt node made ENIs of its own: %d", got)
	}
}

// A profile the node does not serve (PROFILES) gets no ENI there; one it
// stops serving gives its ENI back once it holds nothing.
func TestAProfileTheNodeDoesNotServeHoldsNoENI(t *testing.T) {
	n, _, _ := profilesNode(t)
	n.converge(5)
	if len(profileENIs(n, "blue")) != 1 {
		t.Fatalf("blue's ENIs: %+v", profileENIs(n, "blue"))
	}
	n.env["PROFILES"] = "gold"
	n.converge(5)
	n.clock.Advance(10 * time.Minute)
	n.converge(5)
	if got := profileENIs(n, "blue"); len(got) != 0 {
		t.Fatalf("blue, no longer served here, still has %+v", got)
	}
	if got := profileENIs(n, "gold"); len(got) != 1 {
		t.Fatalf("gold's ENIs: %+v", got)
	}
}
