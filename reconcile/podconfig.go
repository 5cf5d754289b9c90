package reconcile

import (
	"vpc-cni/cloud"
	"vpc-cni/pool"
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
