package status

import (
	"errors"
	"fmt"

	"vpc-cni/hostnet"
	"vpc-cni/internal/printers"
	"vpc-cni/reconcile"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// NodeRules checks the node-level rules (read-only) for the learnt node.
func NodeRules(node store.Node, in settings.Inputs) NodeRulesState {
	cfg, err := reconcile.NodeRulesConfig(node, in)
	if err != nil {
		return NodeRulesState{Detail: err.Error()}
	}
	if cfg.PrimaryIf == "" {
		return NodeRulesState{InPlace: true, Detail: "not managed here: no link has the primary ENI's MAC " + node.PrimaryMAC}
	}
	st, err := hostnet.Check(cfg)
	if err != nil {
		return NodeRulesState{Detail: err.Error(), Status: st}
	}
	s := NodeRulesState{InPlace: st.InPlace(), Status: st, Detail: st.Wanted}
	if !s.InPlace {
		s.Detail = fmt.Sprintf("not in place (table %s, fwmark rule %s, rp_filter %q); the next 'vpcctl reconcile' repairs them; wanted: %s",
			printers.YesNo(st.Table), printers.YesNo(st.Fwmark), st.RPFilter, st.Wanted)
	}
	return s
}

// LearntNode is the node a reconcile pass learnt, or an error saying none has.
func LearntNode(st *store.Store) (store.Node, error) {
	var node store.Node
	var known bool
	err := st.View(func(tx *store.Tx) (err error) { node, known, err = tx.Node(); return err })
	if err == nil && !known || errors.Is(err, store.ErrNotInitialized) {
		return node, fmt.Errorf("no reconcile has run in %s yet; run 'vpcctl reconcile' first", st.Dir())
	}
	return node, err
}
