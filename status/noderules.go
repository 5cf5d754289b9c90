package status

import (
	"errors"
	"fmt"

	"vpc-cni/hostnet"
	"vpc-cni/internal/printers"
	"vpc-cni/pool"
	"vpc-cni/reconcile"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// NodeRules checks the node-level rules (read-only) for the learnt node
// and its pool.
func NodeRules(node store.Node, snap pool.Snapshot, in settings.Inputs) NodeRulesState {
	cfg, err := reconcile.NodeRulesConfig(node, snap, in)
	if err != nil {
		return NodeRulesState{State: NodeRulesUnknown, Managed: true, Detail: err.Error()}
	}
	if cfg.PrimaryIf == "" {
		return NodeRulesState{State: NodeRulesNotManaged, Detail: "no link has the primary ENI's MAC " + node.PrimaryMAC +
			": the node-level rules are not this host's to keep"}
	}
	st, err := hostnet.Check(cfg)
	if err != nil {
		return NodeRulesState{State: NodeRulesUnknown, Managed: true, Detail: err.Error(), Status: st}
	}
	if st.InPlace() {
		return NodeRulesState{State: NodeRulesInPlace, InPlace: true, Managed: true, Status: st, Detail: st.Wanted}
	}
	return NodeRulesState{State: NodeRulesNotInPlace, Managed: true, Status: st,
		Detail: fmt.Sprintf("table %s, fwmark rule %s, rp_filter %q; the next 'vpcctl reconcile' repairs them; wanted: %s",
			printers.YesNo(st.Table), printers.YesNo(st.Fwmark), st.RPFilter, st.Wanted)}
}

// LearntNode is the node a reconcile pass learnt, or an error saying none has.
func LearntNode(st *store.Store) (store.Node, error) {
	node, _, err := LearntPool(st)
	return node, err
}

// LearntPool is LearntNode with the node's pool.
func LearntPool(st *store.Store) (store.Node, pool.Snapshot, error) {
	var node store.Node
	var snap pool.Snapshot
	var known bool
	err := st.View(func(tx *store.Tx) (err error) {
		if node, known, err = tx.Node(); err != nil || !known {
			return err
		}
		snap, err = tx.Snapshot()
		return err
	})
	if err == nil && !known || errors.Is(err, store.ErrNotInitialized) {
		return node, snap, fmt.Errorf("no reconcile has run in %s yet; run 'vpcctl reconcile' first", st.Dir())
	}
	return node, snap, err
}
