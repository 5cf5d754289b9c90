package reconcile

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"vpc-cni/cloud"
	"vpc-cni/pool"
	"vpc-cni/settings"
)

// ClassRules is what the classification of the node's ENIs depends on
// besides EC2's answer.
type ClassRules struct {
	InstanceID     string // this node: its instance tag marks ENIs it created
	ManageUntagged bool   // MANAGE_UNTAGGED_ENI
	// ProfileGroups: the security groups each configured network profile's
	// ENIs must have; an ENI of a profile with others drifted (no new pods).
	// A profile whose groups are given by tag is here only when this pass
	// resolved them: its ENIs' drift is judged only then.
	ProfileGroups map[pool.Pool][]string
	// IMDSProfiles: the pool of ENIs new to the store as IMDS's groups
	// tell it (IMDS-only mode, imdsprofiles.go), by ENI ID.
	IMDSProfiles map[string]imdsProfile
}

// checksGroups reports whether the ENIs of pool p must keep the groups its
// configuration gives (a profile's): they record the groups last checked.
func (r ClassRules) checksGroups(p pool.Pool) bool {
	_, ok := r.ProfileGroups[p]
	return ok
}

func (p *pass) classRules() ClassRules {
	r := ClassRules{InstanceID: p.node.InstanceID, ManageUntagged: p.cfg.ManageUntaggedENI, ProfileGroups: map[pool.Pool][]string{},
		IMDSProfiles: p.imdsPools}
	for _, prof := range p.cfg.Profiles {
		if !prof.GroupsByTag() {
			r.ProfileGroups[prof.Name] = cmpGroups(prof.SecurityGroups, p.node.SecurityGroups)
		} else if gs, ok := p.groupSets[prof.Name]; ok && gs.err == nil {
			r.ProfileGroups[prof.Name] = gs.groups
		}
	}
	return r
}

// factsOf reads from EC2's answer what decides an ENI's class.
func factsOf(t cloud.ENIInfo, instanceID string) pool.ENIFacts {
	noManage, has := t.Tags[pool.TagNoManage]
	tagged := instanceID != "" && t.Tags[cloud.TagInstanceID] == instanceID
	return pool.ENIFacts{Known: true, InterfaceType: t.InterfaceType, NoManage: noManage, HasNoManage: has,
		NodeTagged: tagged, Created: tagged && strings.HasPrefix(t.Description, cloud.DescriptionPrefix)}
}

// createdHere reports whether EC2's answer shows an ENI vpc-cni created for
// this node, on card 0, of the plain type: the only ENIs it tags, modifies,
// detaches or deletes.
func createdHere(t cloud.ENIInfo, instanceID string) bool {
	class, _ := pool.Classify(factsOf(t, instanceID), t.NetworkCard, t.DeviceIndex, false)
	return class == pool.Ours
}

// classify sets e's facts (from EC2's answer when t is one; an IMDS view
// carries the stored facts) and its class under r. An ENI whose facts are
// not known yet (a store from before classes) keeps the class it has, unless
// IMDS already places it on another card. It reports a change of class.
func classify(e *pool.ENI, old pool.ENI, t cloud.ENIInfo, r ClassRules, isNew bool) []Finding {
	if t.Described {
		e.Facts = factsOf(t, r.InstanceID)
		e.Profile = pool.PoolOrDefault(t.Tags[settings.ProfileTag])
		if e.Primary() {
			e.Profile = pool.DefaultPool // the node's own ENI is the default pool's, whatever its tags
		}
		if strings.HasPrefix(e.GroupsDrift, ProfileUnknown) {
			e.GroupsDrift = "" // its tag tells its pool: settled
		}
	}
	found := append(poolFromIMDS(e, old, t, r, isNew), groupsDrift(e, t, r)...)
	if !e.Facts.Known && e.Card == 0 {
		return found
	}
	e.Class, e.Why = pool.Classify(e.Facts, e.Card, e.DeviceIndex, r.ManageUntagged)
	if e.NotOurs() {
		e.Ready = false // nothing of it is handed out, and its host side is not ours to set up
	}
	switch {
	case isNew && e.NotOurs():
		return append(found, Finding{"not-ours-eni", fmt.Sprintf("ENI %s (device %d, card %d) is not ours (%s): left alone; it takes %s",
			e.ID, e.DeviceIndex, e.Card, e.Why, slotCost(*e))})
	case isNew || old.Class == e.Class || old.Class == "" && e.Class != pool.NotOurs:
		return found
	}
	msg := fmt.Sprintf("ENI %s (device %d) is now %s (%s), was %s", e.ID, e.DeviceIndex, e.Class, e.Why, cmpOr(old.Class, "unclassified"))
	if e.NotOurs() {
		msg += "; it gets no new pods"
		if n := heldAddrs(old); n > 0 {
			msg += fmt.Sprintf(", and the %s holding its addresses keep them until they are deleted", Plural(n, "pod", "pods"))
		}
	}
	return append(found, Finding{"eni-class", msg})
}

// groupsDrift judges, from EC2's answer, whether a profile ENI still has its
// profile's security groups; an ENI that lost them gets no new pods until
// they are back. It reports a change either way, and records the groups it
// judged. IMDS views, ENIs of the default pool or of a profile no longer
// configured, and those of a profile by tag that this pass did not resolve,
// are left as they are.
func groupsDrift(e *pool.ENI, t cloud.ENIInfo, r ClassRules) []Finding {
	want, ok := r.ProfileGroups[e.Profile]
	if !t.Described || !ok { // ProfileGroups holds no default pool
		return nil
	}
	was := e.GroupsDrift
	e.GroupsDrift, e.Groups = "", sortedCopy(t.SecurityGroups)
	if !sameGroups(t.SecurityGroups, want) {
		e.GroupsDrift = fmt.Sprintf("its groups are %v, profile %s's are %v", sortedCopy(t.SecurityGroups), e.Profile, sortedCopy(want))
	}
	switch {
	case e.GroupsDrift != "" && was == "":
		return []Finding{{"profile-groups-drift", fmt.Sprintf("ENI %s (device %d) of profile %s: %s: changed outside vpc-cni; it gets no new pods (pods on it keep their addresses) until its groups are the profile's again",
			e.ID, e.DeviceIndex, e.Profile, e.GroupsDrift)}}
	case e.GroupsDrift == "" && was != "":
		return []Finding{{"profile-groups-restored", fmt.Sprintf("ENI %s (device %d) has profile %s's groups again; it takes new pods", e.ID, e.DeviceIndex, e.Profile)}}
	}
	return nil
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

func cmpOr(c pool.Class, dflt string) string {
	if c == "" {
		return dflt
	}
	return string(c)
}

// slotCost says what a not-ours ENI costs the pool.
func slotCost(e pool.ENI) string {
	if e.Card != 0 {
		return fmt.Sprintf("a slot of card %d's own limit, none of card 0's", e.Card)
	}
	return "one of card 0's ENI slots (fewer ENIs and max pods for vpc-cni)"
}

func heldAddrs(e pool.ENI) int {
	n := 0
	for _, b := range e.Blocks {
		for _, a := range b.Addrs {
			if a.State == pool.Assigned {
				n++
			}
		}
	}
	return n
}

// notOursBlocks is what the store keeps of a not-ours ENI's blocks: only
// those a pod still holds (it changed class under them), as EC2 lists them;
// its other addresses are not the pool's and are never adopted.
func notOursBlocks(old pool.ENI, truth []netip.Prefix) []netip.Prefix {
	have := map[netip.Prefix]bool{}
	for _, b := range old.Blocks {
		if held(b) {
			have[b.CIDR] = true
		}
	}
	var out []netip.Prefix
	for _, c := range truth {
		if have[c] {
			out = append(out, c)
		}
	}
	return out
}
