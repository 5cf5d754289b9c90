package reconcile

import (
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
