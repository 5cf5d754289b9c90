package e2e

import (
	"flag"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"vpc-cni/plugin"
	"vpc-cni/settings"
	"vpc-cni/sim/ec2sim"
	"vpc-cni/store"
)

// chaosProfiles is the run's profile mix (`make chaos CHAOS_PROFILES=gold,blue`):
// each profile gets a subnet of its own and a security group, the last one
// SNAT none, and the sandboxes take turns: no profile, then each profile.
// The run's node is then an m5.4xlarge (8 ENIs of 30 addresses), so the two
// ENIs that are not vpc-cni's leave room for every pool.
var chaosProfiles = flag.String("chaos.profiles", "", "TestChaos's network profiles, comma-separated (empty: none)")

type chaosProfile struct {
	name, group, subnet string
	cidr                netip.Prefix
}

// profileMix shapes the run for -chaos.profiles: the instance type, a
// subnet per profile and the profiles' keys.
func profileMix(t *testing.T, opts *worldOpts) []chaosProfile {
	if *chaosProfiles == "" {
		return nil
	}
	if *chaosFamily == "ipv6" {
		t.Log("-chaos.profiles ignored: a profile gives pods an IPv4, and IPv6-only pods have none")
		return nil
	}
	var mix []chaosProfile
	for i, name := range strings.Split(*chaosProfiles, ",") {
		if why := settings.ValidProfileName(name); why != "" {
			t.Fatalf("-chaos.profiles: %q: %s", name, why)
		}
		mix = append(mix, chaosProfile{name: name, group: fmt.Sprintf("sg-0c0c0c0c0c0c0%04x", i+1),
			cidr: netip.PrefixFrom(netip.AddrFrom4([4]byte{100, 64, byte(128 + 16*i), 0}), 20)})
	}
	opts.instanceType = "m5.4xlarge"
	prepare := opts.prepare
	opts.prepare = func(s *ec2sim.Sim) []string {
		extra := prepare(s)
		for i := range mix {
			id, err := s.AddSubnet(mix[i].cidr, "", nil)
			if err != nil {
				t.Fatal(err)
			}
			mix[i].subnet = id
			p := mix[i].name
			extra = append(extra, settings.ProfileKey(p, settings.ProfileSecurityGroups)+"="+mix[i].group,
				settings.ProfileKey(p, settings.ProfileSubnets)+"="+id, settings.ProfileKey(p, settings.ProfileWarmIPTarget)+"=2")
			if i == len(mix)-1 {
				extra = append(extra, settings.ProfileKey(p, settings.ProfileSNAT)+"=none")
			}
		}
		return extra
	}
	return mix
}

// profileConfs gives each slot its profile (round robin, "" first) and the
// ADD configuration that carries it as containerd passes annotations; DEL
// always goes without it (the stored assignment decides).
func (c *chaos) profileConfs(conf map[string]any) {
	for i, s := range c.slots {
		if len(c.profiles) == 0 {
			return
		}
		k := i % (len(c.profiles) + 1)
		if k == 0 {
			continue
		}
		s.profile = c.profiles[k-1].name
		withAnn := map[string]any{}
		for key, v := range conf {
			withAnn[key] = v
		}
		withAnn["runtimeConfig"] = map[string]any{plugin.PodAnnotationsCapability: map[string]string{settings.ProfileAnnotation: s.profile}}
		s.addConf = mustJSON(c.w.tb, withAnn)
	}
}

// checkProfiles: every pod's address is on an ENI of its profile (EC2's
// tag, the profile's group, its subnet), the assignment names the pod's
// profile, and no ENI of a profile holds a default pod's address.
func (c *chaos) checkProfiles(all []store.Assignment) {
	if len(c.profiles) == 0 {
		return
	}
	want := map[string]string{}
	for _, s := range c.slots {
		want[s.p.id] = s.profile
	}
	onENI := map[netip.Addr]ec2sim.ENI{}
	for _, e := range c.w.sim.State().ENIs {
		for _, a := range e.Secondary {
			onENI[a] = e
		}
		for _, p := range e.Prefixes {
			for a := p.Masked().Addr(); p.Contains(a); a = a.Next() {
				onENI[a] = e
			}
		}
	}
	for _, a := range all {
		profile := want[a.ContainerID]
		if string(a.Profile) != profile {
			c.violate("%s (pod of profile %q) holds an assignment of profile %q", a.Key, profile, a.Profile)
		}
		e, ok := onENI[a.IP]
		if !ok {
			c.violate("%s holds %s, on no ENI in EC2", a.Key, a.IP)
			continue
		}
		if got := e.Tags[settings.ProfileTag]; got != profile {
			c.violate("%s (profile %q) holds %s on %s of profile %q", a.Key, profile, a.IP, e.ID, got)
		}
		if i := slices.IndexFunc(c.profiles, func(p chaosProfile) bool { return p.name == profile }); i >= 0 {
			p := c.profiles[i]
			if !slices.Equal(e.Groups, []string{p.group}) || e.SubnetID != p.subnet {
				c.violate("%s (profile %s) is on %s with groups %v in %s; want [%s] in %s", a.Key, profile, e.ID, e.Groups, e.SubnetID, p.group, p.subnet)
			}
		}
	}
}
