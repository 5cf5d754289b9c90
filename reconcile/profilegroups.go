package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"vpc-cni/cloud"
	"vpc-cni/pool"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// Security groups by tag (PROFILE_<NAME>_SECURITY_GROUPS=sg-1,tag:team=pay):
// a profile's groups are its IDs plus every group of the node's VPC that
// carries one of its tags. EC2 alone knows which groups carry a tag, so the
// set is resolved by the pass that needs it, with one DescribeSecurityGroups
// per tag key, and kept for that pass only: to create one of the profile's
// ENIs (place), and to judge whether its ENIs' groups drifted
// (resolveForDrift). A pass at rest compares IMDS's groups of each ENI with
// the groups recorded when it was last judged (pool.ENI.Groups) instead.

// groupSet is a profile's groups as this pass resolved them, or why not.
type groupSet struct {
	groups []string // sorted
	err    error
}

// groupsError is a profile whose groups could not be resolved: no ENI is
// created for it (EC2 would give an ENI with no group the VPC's default).
type groupsError struct {
	Profile pool.Pool
	Err     error
}

func (e *groupsError) Error() string { return e.Err.Error() }
func (e *groupsError) Unwrap() error { return e.Err }

func isGroupsError(err error) bool {
	var g *groupsError
	return errors.As(err, &g)
}

// profileGroups resolves prof's security groups once a pass.
func (p *pass) profileGroups(ctx context.Context, prof settings.Profile) ([]string, error) {
	if gs, ok := p.groupSets[prof.Name]; ok {
		return gs.groups, gs.err
	}
	groups, err := p.lookupGroups(ctx, prof)
	if err != nil {
		err = &groupsError{Profile: prof.Name, Err: err}
	}
	if p.groupSets == nil {
		p.groupSets = map[pool.Pool]groupSet{}
	}
	p.groupSets[prof.Name] = groupSet{groups, err}
	return groups, err
}

// lookupGroups asks EC2 for the VPC's groups carrying each of prof's tags
// (one call per key, its values together) and adds its IDs. Every selector
// must match a group; the union must fit on one ENI.
func (p *pass) lookupGroups(ctx context.Context, prof settings.Profile) ([]string, error) {
	key := settings.ProfileKey(string(prof.Name), settings.ProfileSecurityGroups)
	set := slices.Clone(prof.SecurityGroups)
	var keys []string
	values := map[string][]string{}
	for _, sel := range prof.GroupTags {
		if _, ok := values[sel.Key]; !ok {
			keys = append(keys, sel.Key)
		}
		values[sel.Key] = append(values[sel.Key], sel.Value)
	}
	var unmatched []string
	for _, k := range keys {
		p.rep.Calls = append(p.rep.Calls, "DescribeSecurityGroups")
		found, err := p.Cloud.TaggedGroups(ctx, p.node.VPCID, k, values[k])
		if err != nil {
			return nil, fmt.Errorf("profile %s: listing the security groups of %s tagged %s (%s): %w", prof.Name, p.node.VPCID, k, key, err)
		}
		for _, v := range values[k] {
			n := 0
			for _, g := range found {
				if g.Tags[k] == v {
					set, n = append(set, g.ID), n+1
				}
			}
			if n == 0 {
				unmatched = append(unmatched, settings.TagSelector{Key: k, Value: v}.String())
			}
		}
	}
	if len(unmatched) > 0 {
		return nil, &cloud.Error{Op: "profile " + string(prof.Name), Kind: cloud.KindNotFound, Msg: fmt.Sprintf(
			"no security group of %s matches %s (%s): no ENI of profile %s is created until one does",
			p.node.VPCID, strings.Join(unmatched, ", "), key, prof.Name)}
	}
	slices.Sort(set)
	set = slices.Compact(set)
	if len(set) > settings.MaxProfileGroups {
		return nil, &cloud.Error{Op: "profile " + string(prof.Name), Kind: cloud.KindOther, Msg: fmt.Sprintf(
			"%s selects %d security groups %v; an ENI has at most %d", key, len(set), set, settings.MaxProfileGroups)}
	}
	return set, nil
}

// placeGroups gives a new ENI of a profile whose groups are given by tag
// its resolved groups, or the step an error: it then makes no call.
func (p *pass) placeGroups(ctx context.Context, s *step) {
	if !s.Place.byTag {
		return
	}
	prof, _ := p.cfg.Profile(s.Place.Profile)
	groups, err := p.profileGroups(ctx, prof)
	if err != nil {
		s.placeErr = err
		p.rep.Findings = append(p.rep.Findings, Finding{"profile-groups-unresolved", err.Error()})
		return
	}
	s.Place.Groups, s.Place.byTag = groups, false
}

// needsGroups reports whether a pass must place a new ENI of a profile
// whose groups are given by tag.
func needsGroups(steps []step) bool {
	return slices.ContainsFunc(steps, func(s step) bool { return s.Kind == pool.CreateENI && s.Place.byTag })
}

// resolveForDrift resolves, before the merge judges the drift of the ENIs
// in EC2's answer, the groups of each profile given by tag whose judgement
// may change in this pass: one of its ENIs is new to the store, in another
// pool, or shows other groups than last judged; the profile's groups changed
// in the configuration; or the pass reads EC2 for its safety net (a group
// tagged or untagged since). Otherwise its ENIs keep their judgement and EC2
// is not asked. A profile that cannot be resolved keeps its ENIs' judgement,
// with a finding.
func (p *pass) resolveForDrift(ctx context.Context, truth []cloud.ENIInfo) {
	byTag := slices.ContainsFunc(p.cfg.Profiles, settings.Profile.GroupsByTag)
	if !byTag || !slices.ContainsFunc(truth, func(t cloud.ENIInfo) bool { return t.Described }) {
		return // no profile by tag, or an IMDS view: nothing to judge, no read
	}
	snap, err := p.storedSnapshot()
	if err != nil {
		return // the merge's transaction reports it
	}
	stored := map[string]pool.ENI{}
	for _, e := range snap.ENIs {
		stored[e.ID] = e
	}
	for _, prof := range p.cfg.Profiles {
		if !prof.GroupsByTag() || !p.driftCheckDue(prof, truth, stored) {
			continue
		}
		if _, err := p.profileGroups(ctx, prof); err != nil {
			p.rep.Findings = append(p.rep.Findings, Finding{"profile-groups-unresolved",
				err.Error() + "; its ENIs keep their last check"})
		}
	}
}

func (p *pass) driftCheckDue(prof settings.Profile, truth []cloud.ENIInfo, stored map[string]pool.ENI) bool {
	has := false
	for _, t := range truth {
		if !t.Described || !t.Attached || pool.PoolOrDefault(t.Tags[settings.ProfileTag]) != prof.Name || t.DeviceIndex == 0 && t.NetworkCard == 0 {
			continue
		}
		has = true
		old, ok := stored[t.ID]
		if !ok || old.Profile != prof.Name || !sameGroups(old.Groups, t.SecurityGroups) {
			return true
		}
	}
	return has && (p.resync || p.groupsConfigChanged(prof.Name))
}

// groupsConfigChanged reports whether the profile's SECURITY_GROUPS differ
// from the last pass's.
func (p *pass) groupsConfigChanged(profile pool.Pool) bool {
	key := settings.ProfileKey(string(profile), settings.ProfileSecurityGroups)
	return slices.ContainsFunc(p.rep.Changed, func(c settings.Change) bool { return c.Name == key })
}

// storedSnapshot is the store's pool (empty for a store not created yet).
func (p *pass) storedSnapshot() (pool.Snapshot, error) {
	var snap pool.Snapshot
	err := p.Store.View(func(tx *store.Tx) (err error) {
		snap, err = tx.Snapshot()
		return err
	})
	if errors.Is(err, store.ErrNotInitialized) {
		return pool.Snapshot{}, nil
	}
	return snap, err
}

// groupsBackoff pauses the growth of a profile whose groups could not be
// resolved, as a full subnet does, so passes and ADDs do not ask EC2 again
// and again; status and the ADD's error say why.
func (p *pass) groupsBackoff(tx *store.Tx, res result, now time.Time) error {
	snap, err := tx.Snapshot()
	if err != nil {
		return err
	}
	t := pool.TimersOf(snap, res.Profile)
	t.GrowBlockedUntil, t.GrowBlockedWhy = now.Add(subnetBackoff), res.Err.Error()
	return tx.PutPoolTimers(res.Profile, t)
}
