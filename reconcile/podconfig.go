package reconcile

import (
	"slices"
	"time"

	"vpc-cni/cloud"
	"vpc-cni/pool"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// OnNode is the pool configuration c as a pass applies it on node: prefix
// delegation is off on an instance that cannot hold /28 prefixes. The ADD's
// take (store.TakeForPod) uses it, so its free target is the pass's.
func OnNode(c pool.Config, node store.Node) pool.Config {
	if c.PrefixDelegation && !cloud.PrefixCapable(node.Hypervisor) {
		c.PrefixDelegation = false
	}
	return c
}

// Fullness is whether a pod arriving now can get an IPv4 address on this node
// (a free one, or one a grow pass would get), and if not what is full and
// what frees one: the one judgement STATUS, ADD, pool status, metrics and
// doctor share.
func Fullness(node store.Node, cfg settings.Effective, snap pool.Snapshot, now time.Time, waiting int) pool.Fullness {
	in := pool.Input{Limits: node.Limits, Config: OnNode(cfg.Pool, node), Snapshot: snap, Now: now, Waiting: waiting}
	return pool.Explain(in, NoProvisioning(cfg))
}

// ProfileFullness is Fullness for a pod of profile p: its pool alone, with
// the other pools' ENIs taking their slots.
func ProfileFullness(node store.Node, cfg settings.Effective, p settings.Profile, snap pool.Snapshot, now time.Time, waiting int) pool.Fullness {
	in := pool.Input{Limits: node.Limits, Config: OnNode(p.Pool, node), Snapshot: pool.ForPool(snap, p.Name), Now: now, Waiting: waiting}
	return pool.Explain(in, NoProvisioning(cfg))
}

// Pools is the configuration of every pool a pass plans on node: the
// default pool's, each configured profile's, then a retired pool for each
// profile that still has ENIs but is no longer configured (it gives back
// everything its pods do not hold).
func Pools(cfg settings.Effective, node store.Node, snap pool.Snapshot) []pool.Config {
	var out []pool.Config
	for _, c := range cfg.PoolConfigs() {
		out = append(out, OnNode(c, node))
	}
	for _, name := range RetiredProfiles(cfg, snap) {
		c := OnNode(cfg.Pool, node)
		c.Profile, c.Retired = name, true
		out = append(out, c)
	}
	return out
}

// RetiredProfiles lists, sorted, the profiles ENIs of snap serve that cfg
// does not configure, or that this node no longer serves (PROFILES).
func RetiredProfiles(cfg settings.Effective, snap pool.Snapshot) []string {
	var out []string
	for _, e := range snap.ENIs {
		if p, ok := cfg.Profile(e.Profile); e.Profile == "" || ok && p.Allowed || slices.Contains(out, e.Profile) {
			continue
		}
		out = append(out, e.Profile)
	}
	slices.Sort(out)
	return out
}
