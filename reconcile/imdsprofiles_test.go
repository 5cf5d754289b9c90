package reconcile

import (
	"maps"
	"strings"
	"testing"
	"time"

	"vpc-cni/pool"
	"vpc-cni/store"
)

// imdsOnlyRebuild adopts n's node into a new state file in IMDS-only mode,
// as `vpcctl state rebuild` does for a lost one, with env's configuration
// on top of n's; it checks that no EC2 call was made.
func imdsOnlyRebuild(t *testing.T, n *node, extra env) (*node, *Report) {
	t.Helper()
	e := maps.Clone(n.env)
	maps.Copy(e, extra)
	e["ENABLE_IMDS_ONLY_MODE"] = "true"
	fresh := attachNode(t, n.sim, t.TempDir(), e)
	fresh.r.Names = e.names
	fresh.clock.Advance(time.Hour)
	n.sim.ResetCounters()
	rep, err := fresh.r.Adopt(ctxFor(t), func(*store.Tx) error { return nil })
	if err != nil {
		t.Fatalf("adopt: %v", err)
	}
	if all, _, names := ec2CallCount(n.sim); all != 0 {
		t.Fatalf("an IMDS-only rebuild called EC2: %v", names)
	}
	return fresh, rep
}

// storedPools maps each stored ENI to its pool and whether it is unknown.
func storedPools(n *node) map[string]string {
	out := map[string]string{}
	for _, e := range n.snapshot().ENIs {
		out[e.ID] = string(e.Profile)
		if strings.HasPrefix(e.GroupsDrift, ProfileUnknown) {
			out[e.ID] = "?"
		}
	}
	return out
}

// A lost state rebuilt in IMDS-only mode (no EC2 read, so no tags) puts each
// ENI back in its profile's pool by the groups and subnet IMDS shows, and
// pods of a pool get only its addresses.
func TestAnIMDSOnlyRebuildKnowsTheProfilesByTheirGroups(t *testing.T) {
	n, _, _ := profilesNode(t)
	n.converge(5)
	fresh, rep := imdsOnlyRebuild(t, n, nil)
	gold, blue := profileENIs(n, "gold")[0], profileENIs(n, "blue")[0]
	pools := storedPools(fresh)
	if pools[gold.ID] != "gold" || pools[blue.ID] != "blue" || len(pools) != 3 {
		t.Fatalf("rebuilt pools %v; want %s gold, %s blue", pools, gold.ID, blue.ID)
	}
	if !hasFinding(rep.Findings, "profile-by-groups", gold.ID) {
		t.Fatalf("findings %+v", rep.Findings)
	}
	fresh.pass()
	err := fresh.st.Update(func(tx *store.Tx) error {
		a, err := tx.Take(store.Assignment{Key: "g/eth0"}, fresh.clock.Now(), pool.Config{Cooldown: fresh.cooldown(), Profile: "gold"})
		if err != nil || a.ENIID != gold.ID {
			t.Fatalf("gold's pod: %+v %v, want an address on %s", a, err, gold.ID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for range 8 {
		if a, err := fresh.addPod(); err == nil && (a.ENIID == gold.ID || a.ENIID == blue.ID) {
			t.Fatalf("a pod without a profile got %s on profile ENI %s", a.IP, a.ENIID)
		}
	}
}

// Two profiles with the same groups in the same subnet: IMDS cannot tell
// whose the ENI is. It is reported and gets no new pods, until a pass that
// reads EC2 finds its tag.
func TestAnIMDSOnlyRebuildReportsAnENIItCannotPlace(t *testing.T) {
	n, goldSubnet, _ := profilesNode(t)
	n.converge(5)
	twin := env{"PROFILE_TWIN_SECURITY_GROUPS": "sg-00000901", "PROFILE_TWIN_SUBNETS": goldSubnet}
	fresh, rep := imdsOnlyRebuild(t, n, twin)
	gold, blue := profileENIs(n, "gold")[0], profileENIs(n, "blue")[0]
	if pools := storedPools(fresh); pools[gold.ID] != "?" || pools[blue.ID] != "blue" {
		t.Fatalf("rebuilt pools %v; want %s unknown, %s blue", pools, gold.ID, blue.ID)
	}
	if !hasFinding(rep.Findings, "profile-unknown", gold.ID) || !hasFinding(rep.Findings, "profile-unknown", "profile twin") {
		t.Fatalf("findings %+v; want %s reported as gold's or twin's", rep.Findings, gold.ID)
	}
	fresh.pass()
	err := fresh.st.Update(func(tx *store.Tx) error {
		for _, profile := range []string{"gold", "twin", ""} {
			a, err := tx.Take(store.Assignment{Key: "p-" + profile + "/eth0"}, fresh.clock.Now(), pool.Config{Cooldown: fresh.cooldown(), Profile: pool.Pool(profile)})
			if err == nil && a.ENIID == gold.ID {
				t.Fatalf("a pod of pool %q got %s on the unplaced %s", profile, a.IP, gold.ID)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	delete(fresh.env, "ENABLE_IMDS_ONLY_MODE") // EC2 may be read again: the tag settles it
	fresh.pass()
	if pools := storedPools(fresh); pools[gold.ID] != "gold" {
		t.Fatalf("after an EC2 read: pools %v, want %s gold", pools, gold.ID)
	}
}

// A profile whose groups are given by tag cannot be resolved without EC2:
// an ENI it may own is not placed, while one whose groups it cannot hold is.
func TestAnIMDSOnlyRebuildCannotResolveGroupsByTag(t *testing.T) {
	n, _, _ := profilesNode(t)
	n.converge(5)
	fresh, rep := imdsOnlyRebuild(t, n, env{"PROFILE_BLUE_SECURITY_GROUPS": "sg-00000902,tag:team=blue"})
	gold, blue := profileENIs(n, "gold")[0], profileENIs(n, "blue")[0]
	if pools := storedPools(fresh); pools[gold.ID] != "gold" || pools[blue.ID] != "?" {
		t.Fatalf("rebuilt pools %v; want %s gold, %s unknown", pools, gold.ID, blue.ID)
	}
	if !hasFinding(rep.Findings, "profile-unknown", "given by tag") {
		t.Fatalf("findings %+v", rep.Findings)
	}
}
