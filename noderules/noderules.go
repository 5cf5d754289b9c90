// Package noderules is `vpcctl node-rules sysctls` and `remove`: the
// node-level rules and sysctls that reconcile keeps, set or removed by
// hand, in the node's network namespace only.
package noderules

import (
	"fmt"

	"vpc-cni/hostnet"
	"vpc-cni/pool"
	"vpc-cni/reconcile"
	"vpc-cni/settings"
	"vpc-cni/status"
	"vpc-cni/store"
)

// Remove deletes the rules, under the reconcile lock, in the node's
// namespace only, and names each it removed.
func Remove(st *store.Store) ([]string, error) {
	unlock, _, err := st.LockReconcile(true, 0)
	if err != nil {
		return nil, fmt.Errorf("taking the reconcile lock: %w", err)
	}
	defer unlock()
	if err := inNodeNamespace(st); err != nil {
		return nil, err
	}
	return hostnet.Remove()
}

// inNodeNamespace refuses to run where no link has the learnt primary ENI's
// MAC: rules removed in another namespace are not the node's.
func inNodeNamespace(st *store.Store) error {
	node, err := status.LearntNode(st)
	if err != nil {
		return err
	}
	link, err := hostnet.PrimaryLink(node.PrimaryMAC)
	if err != nil {
		return fmt.Errorf("looking for the primary ENI's link: %w", err)
	}
	if link == "" {
		return fmt.Errorf("no link here has the primary ENI's MAC %s: this is not the node's network namespace, whose rules stay (run it in the node's namespace)", node.PrimaryMAC)
	}
	return nil
}

// Sysctls sets the sysctls the rules need for the node and pool the last
// pass recorded, and names each it set. here is false, and nothing is set,
// where no link has the primary ENI's MAC: that namespace is not this
// node's to set.
func Sysctls(node store.Node, snap pool.Snapshot, in settings.Inputs) (set []string, here bool, err error) {
	cfg, err := reconcile.NodeRulesConfig(node, snap, in)
	if err != nil || cfg.PrimaryIf == "" {
		return nil, false, err
	}
	set, err = hostnet.EnsureSysctls(cfg)
	return set, true, err
}
