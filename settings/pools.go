package settings

import "vpc-cni/pool"

// Specs lists every pool the node serves with its home (subnets, groups,
// SNAT) and its configuration (targets): the default pool's first (the
// node's subnet and groups, SNAT to the node's address, the node's
// targets), then each profile's the node serves (PROFILES), by name.
func (e Effective) Specs() []Profile {
	out := []Profile{e.defaultSpec()}
	for _, p := range e.Profiles {
		if p.Allowed {
			out = append(out, p)
		}
	}
	return out
}

// Spec returns pool p's spec: the default pool's, or profile p's when it is
// configured (served or not: Allowed says).
func (e Effective) Spec(p pool.Pool) (Profile, bool) {
	if p == pool.DefaultPool {
		return e.defaultSpec(), true
	}
	return e.Profile(p)
}

// defaultSpec is the default pool as a spec: its home is the node's
// subnet and groups, or the zone's ENIConfig under custom networking.
func (e Effective) defaultSpec() Profile {
	return Profile{SNAT: SNATNode, Allowed: true, Pool: e.Pool,
		ZoneENIConfig: e.Pool.CustomNetworking, Discovery: e.SubnetDiscovery}
}

// PoolConfigs lists the configuration of every pool the node serves, as
// Specs orders them.
func (e Effective) PoolConfigs() []pool.Config {
	var out []pool.Config
	for _, s := range e.Specs() {
		out = append(out, s.Pool)
	}
	return out
}

// NoProvisioning says why the configuration forbids EC2 mutations, "" when
// it allows them.
func (e Effective) NoProvisioning() string {
	switch {
	case e.IMDSOnly:
		return IMDSOnlyMode + "=true: vpc-cni makes no EC2 call"
	case e.DisableProvisioning:
		return DisableProvisioning + "=true: vpc-cni makes no EC2 call that changes anything"
	}
	return ""
}

// ownTargets reports whether profile name sets any target of its own (a
// registry row of PerProfile scope).
func (r *resolver) ownTargets(name string) bool {
	for _, k := range Registry {
		if _, _, ok := r.in.Lookup(ProfileKey(name, k.Name)); ok && k.Scope == PerProfile {
			return true
		}
	}
	return false
}
