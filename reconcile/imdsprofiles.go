package reconcile

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"vpc-cni/cloud"
	"vpc-cni/pool"
	"vpc-cni/settings"
)

// In IMDS-only mode no EC2 read is allowed, so an ENI new to the store (a
// lost state file rebuilt, a first pass) shows no vpc-cni.io/profile tag.
// IMDS does show each ENI's security groups and subnet: an ENI whose groups
// are exactly one configured pool's (and whose subnet is one of that
// profile's, where it names its subnets by ID) is that pool's. An ENI that
// fits several pools, or might be a profile's whose groups are given by tag
// (EC2 alone resolves them), serves none: it gets no new pods until a pass
// reading EC2 finds its tag, or the configuration tells the pools apart.

// ProfileUnknown starts the GroupsDrift of an ENI whose pool IMDS could not
// tell: it keeps Profile "" and gets no new pods (pool.ENI.GroupsDrift).
const ProfileUnknown = "pool unknown without EC2: "

// imdsProfile is what IMDS says of an ENI's pool.
type imdsProfile struct {
	Profile pool.Pool // the pool ("" the default) when Unknown is ""
	Unknown string    // why no pool can be told (ProfileUnknown...)
	Groups  []string  // its groups as IMDS shows them, sorted
}

// imdsProfiles judges, from IMDS, the pool of every secondary ENI of card 0
// that the store does not know or could not place before (one IMDS read of
// its groups each). Nothing when no profile is configured.
func (p *pass) imdsProfiles(ctx context.Context, truth []cloud.ENIInfo) map[string]imdsProfile {
	if len(p.cfg.Profiles) == 0 {
		return nil
	}
	snap, err := p.storedSnapshot()
	if err != nil {
		return nil // the merge's transaction reports it
	}
	stored := map[string]pool.ENI{}
	for _, e := range snap.ENIs {
		stored[e.ID] = e
	}
	home, _ := p.home(p.cfg.Specs()[0]) // a bad custom networking setting fails the pass later
	out := map[string]imdsProfile{}
	for _, t := range truth {
		old, known := stored[t.ID]
		if t.NetworkCard != 0 || t.DeviceIndex == 0 || known && !strings.HasPrefix(old.GroupsDrift, ProfileUnknown) {
			continue
		}
		groups, err := p.Cloud.ENIGroups(ctx, t.MAC)
		if err != nil {
			out[t.ID] = imdsProfile{Unknown: ProfileUnknown + "its security groups could not be read from IMDS: " + err.Error()}
			continue
		}
		out[t.ID] = p.poolByGroups(home, t.SubnetID, groups)
	}
	return out
}

// poolByGroups is the pure judgement: which pools an ENI with these groups
// in this subnet may serve.
func (p *pass) poolByGroups(home placement, subnet string, groups []string) imdsProfile {
	out := imdsProfile{Groups: sortedCopy(groups)}
	var fits, byTag []string
	if sameGroups(groups, home.Groups) && (p.cfg.Pool.CustomNetworking || p.cfg.SubnetDiscovery != settings.DiscoveryNever || subnet == home.SubnetID) {
		fits = append(fits, "the default pool")
	}
	for _, prof := range p.cfg.Profiles {
		switch {
		case prof.GroupsByTag():
			if containsAll(groups, prof.SecurityGroups) {
				byTag = append(byTag, string(prof.Name))
			}
		case sameGroups(groups, cmpGroups(prof.SecurityGroups, p.node.SecurityGroups)) && p.inProfileSubnets(prof, subnet):
			fits = append(fits, "profile "+string(prof.Name))
		}
	}
	switch {
	case len(byTag) > 0:
		out.Unknown = fmt.Sprintf("%sits groups %v may be those of profile %s, whose groups are given by tag (EC2 resolves them)",
			ProfileUnknown, out.Groups, strings.Join(byTag, ", "))
		if len(fits) > 0 {
			out.Unknown += ", or of " + strings.Join(fits, ", ")
		}
	case len(fits) > 1:
		out.Unknown = fmt.Sprintf("%sits groups %v in %s fit %s", ProfileUnknown, out.Groups, subnet, strings.Join(fits, " and "))
	case len(fits) == 1:
		out.Profile = pool.Pool(strings.TrimPrefix(fits[0], "profile "))
		if fits[0] == "the default pool" {
			out.Profile = ""
		}
	}
	return out // no fit: the default pool
}

// inProfileSubnets reports whether an ENI in subnet may be prof's: one of
// its subnets by ID, or the node's when it names none; with a tag selector
// IMDS cannot tell, so any subnet may be.
func (p *pass) inProfileSubnets(prof settings.Profile, subnet string) bool {
	switch {
	case len(prof.SubnetTags) > 0:
		return true
	case len(prof.Subnets) > 0:
		return slices.Contains(prof.Subnets, subnet)
	}
	return subnet == p.node.SubnetID
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// poolFromIMDS sets the pool of an ENI that IMDS alone describes and the
// store did not know (or could not place): as r.IMDSProfiles judged it. It
// reports a change.
func poolFromIMDS(e *pool.ENI, old pool.ENI, t cloud.ENIInfo, r ClassRules, isNew bool) []Finding {
	j, ok := r.IMDSProfiles[t.ID]
	if t.Described || !ok || !isNew && !strings.HasPrefix(old.GroupsDrift, ProfileUnknown) {
		return nil
	}
	e.Profile, e.GroupsDrift, e.Groups = j.Profile, j.Unknown, nil
	if r.checksGroups(j.Profile) {
		e.Groups = j.Groups
	}
	switch {
	case j.Unknown != "" && j.Unknown != old.GroupsDrift:
		return []Finding{{"profile-unknown", fmt.Sprintf("ENI %s (device %d): %s; it gets no new pods until a pass reading EC2 "+
			"(%s=false) finds its %s tag", t.ID, t.DeviceIndex, strings.TrimPrefix(j.Unknown, ProfileUnknown), settings.IMDSOnlyMode, settings.ProfileTag)}}
	case r.checksGroups(j.Profile):
		return []Finding{{"profile-by-groups", fmt.Sprintf("ENI %s (device %d) serves profile %s: IMDS shows its groups %v (no EC2 read for its tag)",
			t.ID, t.DeviceIndex, j.Profile, j.Groups)}}
	}
	return nil
}
