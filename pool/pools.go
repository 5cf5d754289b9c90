package pool

import (
	"slices"
	"strings"
	"time"
)

// Pool names one of the node's address pools: DefaultPool, or a network
// profile's (PROFILE_<NAME>_* keys). Every rule that is per pool takes one;
// none asks which kind it is. The default pool's name is empty so the state
// file (ENI records, waiters, timers) reads as it always has.
type Pool string

// DefaultPool is the pool of pods that picked no profile.
const DefaultPool Pool = ""

// PoolOrDefault is the pool a name read at an edge (a pod's annotation, an
// ENI's tag) names: blank names the default pool.
func PoolOrDefault(name string) Pool { return Pool(strings.TrimSpace(name)) }

// Where names the pool in messages: "the pool" or "profile X's pool".
func (p Pool) Where() string {
	if p == DefaultPool {
		return "the pool"
	}
	return "profile " + string(p) + "'s pool"
}

// NeedsIPv4 reports whether the pool's pods need an IPv4 address: a
// profile's pool is the IPv4 addresses of its ENIs; the default pool's pods
// may take an IPv6 alone.
func (p Pool) NeedsIPv4() bool { return p != DefaultPool }

// OnNode is the pool configuration c as it applies on a node: prefix
// delegation is off on an instance that cannot hold /28 prefixes.
func OnNode(c Config, prefixCapable bool) Config {
	c.PrefixDelegation = c.PrefixDelegation && prefixCapable
	return c
}

// Judge is whether a pod of c's pool arriving now can get an IPv4 address
// (a free one, or one a grow pass would get), and if not what is full and
// what frees one: the one judgement STATUS, ADD, pool status, metrics and
// doctor share. c is the pool's configuration as it applies on the node;
// noGrowth says why the configuration stops growth ("" when it grows).
func Judge(l Limits, c Config, s Snapshot, now time.Time, waiting int, noGrowth string) Fullness {
	in := Input{Limits: l, Config: c, Snapshot: ForPool(s, c.Profile), Now: now, Waiting: waiting}
	return Explain(in, noGrowth)
}

// Pools is the configuration of every pool a pass plans: served (the
// default pool's first, then each profile's the node serves), as they apply
// on the node, then a retired pool for each pool that still has ENIs in s
// but is not served (it gives back everything its pods do not hold).
func Pools(served []Config, s Snapshot, prefixCapable bool) []Config {
	var out []Config
	for _, c := range served {
		out = append(out, OnNode(c, prefixCapable))
	}
	for _, name := range Retired(served, s) {
		c := OnNode(served[0], prefixCapable)
		c.Profile, c.Retired = name, true
		out = append(out, c)
	}
	return out
}

// Retired lists, sorted, the pools ENIs of s serve that are not served.
func Retired(served []Config, s Snapshot) []Pool {
	var out []Pool
	for _, e := range s.ENIs {
		known := slices.ContainsFunc(served, func(c Config) bool { return c.Profile == e.Profile })
		if known || slices.Contains(out, e.Profile) {
			continue
		}
		out = append(out, e.Profile)
	}
	slices.Sort(out)
	return out
}

// String is the pool's name for tables and messages: "default" or the
// profile's name.
func (p Pool) String() string {
	if p == DefaultPool {
		return "default"
	}
	return string(p)
}
