package reconcile

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"vpc-cni/cloud"
	"vpc-cni/pool"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// placement is where a new ENI goes: its subnet (with the CIDR when known)
// and security groups. It is chosen before the create call and kept in the
// intent, so a replay after a crash asks EC2 for the very same ENI.
type placement struct {
	SubnetID string
	CIDR     netip.Prefix // zero: unknown yet (a custom networking subnet)
	Groups   []string
	// discover: the choice needs EC2's subnets (subnet discovery); place
	// makes it before the create call.
	discover bool
	// Profile: the network profile of the new ENI ("" the default pool);
	// subnets and subnetTags: the subnets it may go to (profiles.go).
	Profile    pool.Pool
	subnets    []string
	subnetTags map[string]string
	// byTag: the profile's groups are given by tag; place resolves them
	// into Groups before the create call (profilegroups.go).
	byTag bool
}

// home is where a pool's new ENIs go before any EC2 call, as its spec
// says: the zone's custom networking subnet with its groups, or the
// subnets it names (subnet discovery chooses among them), or the node's
// subnet; its groups (by tag: place resolves them), else the primary
// ENI's. discover is set when subnet discovery must choose.
func (p *pass) home(spec settings.Profile) (placement, error) {
	node := p.node
	h := placement{SubnetID: node.SubnetID, CIDR: node.SubnetCIDR, Profile: spec.Name,
		Groups: cmpGroups(spec.SecurityGroups, node.SecurityGroups)}
	if spec.GroupsByTag() {
		h.Groups, h.byTag = nil, true // never the primary's: place resolves them
	}
	switch {
	case spec.ZoneENIConfig:
		c, err := p.zoneENIConfig()
		if err != nil {
			return h, err
		}
		h.SubnetID, h.CIDR, h.Groups = c.Subnet, netip.Prefix{}, cmpGroups(c.SecurityGroups, node.SecurityGroups)
		if c.Subnet == node.SubnetID {
			h.CIDR = node.SubnetCIDR
		}
	case len(spec.Subnets) > 0 || len(spec.SubnetTags) > 0:
		h.SubnetID, h.CIDR, h.discover = "", netip.Prefix{}, true
		h.subnets, h.subnetTags = spec.Subnets, spec.SubnetTags
	case spec.Discovery == settings.DiscoveryAlways:
		h.discover = true
	case spec.Discovery == settings.DiscoveryWhenFull:
		h.discover = p.now().Before(p.fullSubnets[node.SubnetID])
	}
	return h, nil
}

// zoneENIConfig is the custom networking subnet and groups of the node's
// zone; its absence is a configuration error.
func (p *pass) zoneENIConfig() (settings.ENIConfig, error) {
	az := p.node.AZ
	c, ok, err := settings.ENIConfigFor(p.inputs(), az)
	if err != nil {
		return c, ConfigError{err}
	}
	if !ok {
		return c, ConfigError{fmt.Errorf("%s=true but %s is not set: custom networking needs the pod subnet of zone %s",
			settings.CustomNetworkCfg, settings.ENIConfigKey(az), az)}
	}
	return c, nil
}

func cmpGroups(configured, primary []string) []string {
	if len(configured) > 0 {
		return configured
	}
	return primary
}

// place settles the subnet of every new ENI that subnet discovery chooses:
// one DescribeSubnets for the pass, the eligible subnet with the most free
// addresses for each ENI (less what earlier ENIs of the pass take), and one
// transaction that writes the choices into the intents before any create.
// A step with no subnet to go to fails with a subnet-full error. The groups
// of a profile given by tag are resolved here too; a step whose groups
// cannot be fails with why.
func (p *pass) place(ctx context.Context, steps []step) error {
	discover := slices.ContainsFunc(steps, func(s step) bool { return s.Kind == pool.CreateENI && s.Place.discover })
	if !discover && !needsGroups(steps) {
		return nil
	}
	var subnets []cloud.Subnet
	if discover {
		p.rep.Calls = append(p.rep.Calls, "DescribeSubnets")
		var err error
		if subnets, err = p.Cloud.ZoneSubnets(ctx, p.node.VPCID, p.node.AZ); err != nil {
			return fmt.Errorf("subnet discovery: listing the subnets of %s in %s: %w", p.node.VPCID, p.node.AZ, err)
		}
	}
	for i := range steps {
		s := &steps[i]
		if s.Kind != pool.CreateENI {
			continue
		}
		if p.placeGroups(ctx, s); s.placeErr != nil || !s.Place.discover {
			continue
		}
		need := addressesOf(s.Action)
		forCluster := cloud.ForCluster(subnets, p.node.SubnetID, p.cfg.ClusterName)
		sub, ok := chooseSubnet(forCluster, p.node.SubnetID, p.fullSubnets, p.now(), need)
		if s.Place.namesSubnets() {
			sub, ok = profileSubnet(subnets, s.Place, p.fullSubnets, p.now(), need)
		}
		switch {
		case !ok && s.Place.namesSubnets():
			s.placeErr = noProfileSubnet(p.node.AZ, subnets, s.Place, p.fullSubnets, p.now(), need)
			continue
		case !ok:
			s.placeErr = noSubnetLeft(p.node, forCluster, p.fullSubnets, p.now(), need)
			continue
		}
		s.Place = placement{SubnetID: sub.ID, CIDR: sub.CIDR, Groups: s.Place.Groups, Profile: s.Place.Profile}
		for j := range subnets {
			if subnets[j].ID == sub.ID {
				subnets[j].Available -= need
			}
		}
	}
	return p.recordCreates(steps)
}

// recordCreates records the intents of the creates that were placed.
func (p *pass) recordCreates(steps []step) error {
	return p.Store.Update(func(tx *store.Tx) error {
		for _, s := range steps {
			if s.Kind == pool.CreateENI && s.placeErr == nil {
				if err := tx.PutIntent(intentOf(s)); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// addressesOf is how many subnet addresses a new ENI takes: its primary and
// its secondaries or prefixes.
func addressesOf(a pool.Action) int {
	if a.Prefixes {
		return 1 + a.Count*pool.PrefixSize
	}
	return 1 + a.Count
}

// chooseSubnet is subnet discovery's choice: among the node's subnet (unless
// tagged kubernetes.io/role/cni=0) and the subnets tagged
// kubernetes.io/role/cni=1, none marked full, the one with the most free
// addresses that has room for need (ties by ID: the list is sorted so).
func chooseSubnet(subnets []cloud.Subnet, own string, full map[string]time.Time, now time.Time, need int) (cloud.Subnet, bool) {
	var best cloud.Subnet
	found := false
	for _, s := range subnets {
		eligible := s.Tags[cloud.CNISubnetTag] == "1" || s.ID == own && s.Tags[cloud.CNISubnetTag] != "0"
		if !eligible || now.Before(full[s.ID]) || s.Available < need {
			continue
		}
		if !found || s.Available > best.Available || s.Available == best.Available && s.ID < best.ID {
			best, found = s, true
		}
	}
	return best, found
}

// noSubnetLeft says why subnet discovery found nowhere to put an ENI.
func noSubnetLeft(node store.Node, subnets []cloud.Subnet, full map[string]time.Time, now time.Time, need int) error {
	var seen []string
	for _, s := range subnets {
		switch {
		case s.ID != node.SubnetID && s.Tags[cloud.CNISubnetTag] != "1":
		case now.Before(full[s.ID]):
			seen = append(seen, fmt.Sprintf("%s full until %s", s.ID, full[s.ID].Format(time.TimeOnly)))
		default:
			seen = append(seen, fmt.Sprintf("%s %d free", s.ID, s.Available))
		}
	}
	return &cloud.Error{Op: "subnet discovery", Kind: cloud.KindSubnetFull, Msg: fmt.Sprintf(
		"no subnet in %s has %d free addresses for a new ENI (%s); tag more subnets %s=1",
		node.AZ, need, strings.Join(seen, ", "), cloud.CNISubnetTag)}
}

// markFull finds the subnets that answered "no free addresses" in this
// pass: a new ENI's subnet, or the subnet of the ENI an assign was for.
func markFull(results []result, truth []cloud.ENIInfo, until time.Time) map[string]time.Time {
	out := map[string]time.Time{}
	for _, res := range results {
		if res.Err == nil || res.placeErr != nil || cloud.Classify(res.Err) != cloud.KindSubnetFull {
			continue
		}
		subnet := res.Place.SubnetID
		if res.Kind == pool.Assign {
			info, _ := findENI(truth, res.ENIID)
			subnet = info.SubnetID
		}
		if subnet != "" {
			out[subnet] = until
		}
	}
	return out
}

// roomElsewhere reports whether subnet discovery has somewhere else to put
// a new ENI once the subnets in marks are full: then one subnet's
// exhaustion is not the node's, and growth goes on there at once.
func (p *pass) roomElsewhere(ctx context.Context, marks map[string]time.Time) bool {
	if len(marks) == 0 || p.cfg.Pool.CustomNetworking || p.cfg.SubnetDiscovery == settings.DiscoveryNever {
		return false
	}
	subnets := cloud.ForCluster(p.zoneSubnets(ctx), p.node.SubnetID, p.cfg.ClusterName)
	full := map[string]time.Time{}
	for id, t := range p.fullSubnets {
		full[id] = t
	}
	for id, t := range marks {
		full[id] = t
	}
	_, ok := chooseSubnet(subnets, p.node.SubnetID, full, p.now(), 2)
	return ok
}
