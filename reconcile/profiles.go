package reconcile

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	"vpc-cni/cloud"
	"vpc-cni/pool"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// homes is where each served pool's new ENIs go (home).
func (p *pass) homes() (map[pool.Pool]placement, error) {
	out := map[pool.Pool]placement{}
	for _, spec := range p.cfg.Specs() {
		h, err := p.home(spec)
		if err != nil {
			return nil, err
		}
		out[spec.Name] = h
	}
	return out, nil
}

// profileSubnet chooses a profile's subnet for a new ENI: among the zone's
// subnets those it names by ID or whose tags match one of its selectors,
// none marked full, the one with the most free addresses that has room for
// need (ties by ID). A subnet of another zone is never in the list.
func profileSubnet(subnets []cloud.Subnet, h placement, full map[string]time.Time, now time.Time, need int) (cloud.Subnet, bool) {
	var best cloud.Subnet
	found := false
	for _, s := range subnets {
		if !h.selects(s) || now.Before(full[s.ID]) || s.Available < need {
			continue
		}
		if !found || s.Available > best.Available || s.Available == best.Available && s.ID < best.ID {
			best, found = s, true
		}
	}
	return best, found
}

// namesSubnets reports whether the pool's configuration names the subnets
// its new ENIs may go to (a profile's SUBNETS): subnet discovery then
// chooses among those, not among the cluster's.
func (h placement) namesSubnets() bool { return len(h.subnets) > 0 || len(h.subnetTags) > 0 }

// selects reports whether the profile's subnets name s.
func (h placement) selects(s cloud.Subnet) bool {
	if slices.Contains(h.subnets, s.ID) {
		return true
	}
	for k, v := range h.subnetTags {
		if tv, ok := s.Tags[k]; ok && tv == v {
			return true
		}
	}
	return false
}

// noProfileSubnet says why a profile's new ENI has nowhere to go.
func noProfileSubnet(az string, subnets []cloud.Subnet, h placement, full map[string]time.Time, now time.Time, need int) error {
	var seen []string
	for _, s := range subnets {
		switch {
		case !h.selects(s):
		case now.Before(full[s.ID]):
			seen = append(seen, fmt.Sprintf("%s full until %s", s.ID, full[s.ID].Format(time.TimeOnly)))
		default:
			seen = append(seen, fmt.Sprintf("%s %d free", s.ID, s.Available))
		}
	}
	named := append(slices.Clone(h.subnets), tagList(h.subnetTags)...)
	what := "none of them is in the zone"
	if len(seen) > 0 {
		what = strings.Join(seen, ", ")
	}
	return &cloud.Error{Op: "profile " + string(h.Profile), Kind: cloud.KindSubnetFull, Msg: fmt.Sprintf(
		"no subnet of profile %s in %s has %d free addresses for a new ENI (%s: %s)", h.Profile, az, need,
		settings.ProfileKey(string(h.Profile), settings.ProfileSubnets)+"="+strings.Join(named, ","), what)}
}

func tagList(tags map[string]string) []string {
	var out []string
	for k, v := range tags {
		out = append(out, "tag:"+k+"="+v)
	}
	slices.Sort(out)
	return out
}

// profileTags are the tags of a new ENI of profile (none for the default pool).
func profileTags(tags map[string]string, profile pool.Pool) map[string]string {
	if profile == "" {
		return tags
	}
	out := map[string]string{settings.ProfileTag: string(profile)}
	for k, v := range tags {
		out[k] = v
	}
	return out
}

// profileGroupsChanged checks, at rest, each profile ENI's security groups
// as IMDS shows them (one read an ENI, no EC2 call) against what the store
// says of them: an ENI whose groups left its profile's, or came back, sends
// the pass to EC2, whose answer the merge judges (groupsDrift).
//
// A profile whose groups are given by tag cannot be judged without EC2: its
// ENI's groups are compared with those recorded when it was last judged,
// and a change of the profile's groups in the configuration sends the pass
// to EC2 too.
func (p *pass) profileGroupsChanged(ctx context.Context, snap pool.Snapshot) string {
	want := p.classRules().ProfileGroups
	for _, e := range snap.ENIs {
		prof, configured := p.cfg.Profile(e.Profile) // the default pool is no profile
		if !configured || e.MAC == "" {
			continue
		}
		if prof.GroupsByTag() && p.groupsConfigChanged(prof.Name) {
			return fmt.Sprintf("profile %s's security groups changed in the configuration", prof.Name)
		}
		have, err := p.Cloud.ENIGroups(ctx, e.MAC)
		if err != nil {
			p.log().Info("a profile ENI's security groups not read from IMDS", "eni", e.ID, "err", err)
			continue
		}
		changed := !sameGroups(have, e.Groups)
		if groups, ok := want[e.Profile]; ok {
			changed = !sameGroups(have, groups) != (e.GroupsDrift != "")
		}
		if changed {
			return fmt.Sprintf("IMDS shows other security groups on %s (profile %s)", e.ID, e.Profile)
		}
	}
	return ""
}

// profileBackoff is noteBackoff for a profile pool refused for want of
// addresses: with another of its subnets with room (profilesWithRoom) the
// full one is only marked (markFull) and growth goes on there; else the
// profile's pool alone backs off, and the other pools grow on.
func (p *pass) profileBackoff(tx *store.Tx, res result, now time.Time) error {
	if p.profileRoom[res.Profile] {
		return tx.AddEvent(store.Event{Time: now, Kind: "subnet-full", Message: fmt.Sprintf(
			"%v; profile %s's new ENIs go to another of its subnets", res.Err, res.Profile)})
	}
	snap, err := tx.Snapshot()
	if err != nil {
		return err
	}
	until := now.Add(subnetBackoff)
	t := pool.TimersOf(snap, res.Profile)
	t.GrowBlockedUntil, t.GrowBlockedWhy = until, fmt.Sprintf("profile %s's subnets exhausted: %v", res.Profile, res.Err)
	if err := tx.PutPoolTimers(res.Profile, t); err != nil {
		return err
	}
	return tx.AddEvent(store.Event{Time: now, Kind: "subnet-full", Message: fmt.Sprintf(
		"%v; profile %s backs off until %s", res.Err, res.Profile, until.Format(time.RFC3339))})
}

// profilesWithRoom is the profiles that EC2 refused addresses in a subnet
// this pass found full (marks) and that have another subnet with room for
// a new ENI. A profile no subnet of which had room when the pass placed its
// ENI has none.
func (p *pass) profilesWithRoom(ctx context.Context, results []result, marks map[string]time.Time) map[pool.Pool]bool {
	out := map[pool.Pool]bool{}
	for _, res := range results {
		h, ok := p.refusedHome(res)
		if !ok || out[res.Profile] || !h.mayHaveRoom(marks) {
			continue
		}
		full := map[string]time.Time{}
		maps.Copy(full, p.fullSubnets)
		maps.Copy(full, marks)
		if _, room := profileSubnet(p.zoneSubnets(ctx), h, full, p.now(), 2); room {
			out[res.Profile] = true
		}
	}
	return out
}

// refusedHome is the home of the profile pool whose growth EC2 refused in
// res for want of addresses, when the profile names its subnets.
func (p *pass) refusedHome(res result) (placement, bool) {
	if res.Profile == "" || res.placeErr != nil || !cloud.IsKind(res.Err, cloud.KindSubnetFull) {
		return placement{}, false
	}
	spec, ok := p.cfg.Profile(res.Profile)
	if !ok {
		return placement{}, false
	}
	h, err := p.home(spec)
	return h, err == nil && h.namesSubnets()
}

// mayHaveRoom reports whether a subnet the profile names may have room once
// those in marks are full: a tag may select any subnet, an ID not marked.
func (h placement) mayHaveRoom(marks map[string]time.Time) bool {
	return len(h.subnetTags) > 0 || slices.ContainsFunc(h.subnets, func(id string) bool { _, full := marks[id]; return !full })
}

// zoneRead is the zone's subnets once read.
type zoneRead struct {
	subnets []cloud.Subnet
	read    bool
}

// zoneSubnets lists the subnets of the node's zone, read once for the
// results settle judges (none when EC2 does not answer: the pass notes why).
func (p *pass) zoneSubnets(ctx context.Context) []cloud.Subnet {
	if p.zone.read {
		return p.zone.subnets
	}
	p.rep.Calls = append(p.rep.Calls, "DescribeSubnets")
	subnets, err := p.Cloud.ZoneSubnets(ctx, p.node.VPCID, p.node.AZ)
	if err != nil {
		p.rep.Failed = append(p.rep.Failed, "subnet discovery: "+err.Error())
	}
	p.zone.subnets, p.zone.read = subnets, true
	return subnets
}

// KeepSource lists the blocks of the ENIs of every configured profile with
// SNAT none: their pods keep their own address for every destination
// (hostnet.Config.KeepSource).
func KeepSource(cfg settings.Effective, snap pool.Snapshot) []netip.Prefix {
	var out []netip.Prefix
	for _, e := range snap.ENIs {
		if spec, ok := cfg.Spec(e.Profile); !ok || spec.SNAT != settings.SNATNone {
			continue
		}
		for _, b := range e.Blocks {
			out = append(out, b.CIDR)
		}
	}
	slices.SortFunc(out, func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr()) })
	return out
}

// keepSourceGrew reports whether the pass grew a profile with SNAT none: a
// grow-only pass then sets the node rules too, so the new addresses keep
// their source from their pod's first packet.
func (p *pass) keepSourceGrew() bool {
	return slices.ContainsFunc(p.rep.Plan.Actions, func(a pool.Action) bool {
		spec, ok := p.cfg.Spec(a.Profile)
		return ok && spec.SNAT == settings.SNATNone && (a.Kind == pool.CreateENI || a.Kind == pool.Assign)
	})
}
