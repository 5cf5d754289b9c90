package migrate

import (
	"fmt"
	"net/netip"
	"sort"

	"vpc-cni/cloud"
	"vpc-cni/internal/printers"
	"vpc-cni/pool"
	"vpc-cni/settings"
)

// A node aws-node serves may have ENIs of a network profile: vpc-cni served
// it before, aws-node took it over, kept those ENIs and put pods on them.
// The pass that adopts the node reads each ENI's profile tag, so such an
// ENI stays its profile's and never serves the default pool; a checkpoint
// pod on it is recorded as that profile's pod (store.Tx.Restore takes the
// ENI's), so it keeps its address and nothing else is given it. Migrate
// names both before it writes, the same in a dry run: the pod got its
// address with no profile at all.

// profileENI is an attached ENI, not the node's primary, of a profile.
type profileENI struct {
	id      string
	profile pool.Pool
	device  int
}

// profileENIs lists the node's profile ENIs by device index. The primary
// ENI is the default pool's whatever its tags, as a pass classifies it.
func profileENIs(enis []cloud.ENIInfo) []profileENI {
	var out []profileENI
	for _, e := range enis {
		name := pool.PoolOrDefault(e.Tags[settings.ProfileTag])
		if !e.Attached || name == pool.DefaultPool || e.DeviceIndex == 0 && e.NetworkCard == 0 {
			continue
		}
		out = append(out, profileENI{id: e.ID, profile: name, device: e.DeviceIndex})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].device < out[j].device })
	return out
}

// markProfiles sets the profile of every checkpoint pod on a profile ENI
// and returns the findings: one for each profile ENI, saying whose it is
// and, when the node does not serve its profile, that it gets no new pods;
// one for each such pod.
func (m *migration) markProfiles(enis []cloud.ENIInfo, cfg settings.Effective) []string {
	var out []string
	for _, e := range profileENIs(enis) {
		prof, configured := cfg.Profile(e.profile)
		out = append(out, eniFinding(e, prof, configured))
		for i, p := range m.pods {
			if !p.Adopted || p.ENI != e.id || !isIPv4(p.IP) {
				continue
			}
			m.pods[i].Profile = string(e.profile)
			out = append(out, podFinding(p, e, prof, configured))
		}
	}
	return out
}

func eniFinding(e profileENI, prof settings.Profile, configured bool) string {
	head := fmt.Sprintf("ENI %s (device %d) carries %s=%s: it is profile %s's, never the default pool's", e.id, e.device,
		settings.ProfileTag, e.profile, e.profile)
	switch {
	case !configured:
		return head + fmt.Sprintf("; this node does not configure that profile (no %s keys): it gets no new pods, "+
			"its free addresses go back to EC2 and its pods keep theirs until they are deleted", settings.ProfileKey(e.profile, "*"))
	case !prof.Allowed:
		return head + fmt.Sprintf("; %s does not name that profile on this node: it gets no new pods, "+
			"its free addresses go back to EC2 and its pods keep theirs until they are deleted", settings.Profiles)
	}
	return head + "; it serves that profile's pods while its security groups are the profile's"
}

func podFinding(p Pod, e profileENI, prof settings.Profile, configured bool) string {
	msg := fmt.Sprintf("pod %s (%s) holds %s on ENI %s of profile %s, which aws-node gave it without any profile: "+
		"it is recorded as profile %s's pod, so it keeps its address and its traffic leaves through that ENI with its "+
		"security groups as under aws-node", printers.FirstOf(p.Pod, p.HostVeth), p.Key, p.IP, e.id, e.profile, e.profile)
	if configured && prof.Allowed && prof.SNAT == settings.SNATNone {
		msg += fmt.Sprintf(" (%s=none: its traffic leaving the VPC now keeps its own address)",
			settings.ProfileKey(e.profile, settings.ProfileSNAT))
	}
	if !configured || !prof.Allowed {
		return msg + "; recreate it to give it an address of the default pool (this node does not serve the profile)"
	}
	return msg + fmt.Sprintf("; recreate it to give it the pool it should have (annotated %s: %s if it is that profile's)",
		settings.ProfileAnnotation, e.profile)
}

func isIPv4(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && a.Is4()
}
