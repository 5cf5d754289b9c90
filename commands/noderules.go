package commands

import (
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"vpc-cni/hostnet"
	"vpc-cni/reconcile"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// NodeRulesState is whether the node-level rules match the configuration.
type NodeRulesState struct {
	InPlace bool   `json:"inPlace"`
	Detail  string `json:"detail"`
	hostnet.Status
}

// nodeRulesState checks the rules (read-only) for the learnt node.
func nodeRulesState(node store.Node, in settings.Inputs) NodeRulesState {
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
			yesNo(st.Table), yesNo(st.Fwmark), st.RPFilter, st.Wanted)
	}
	return s
}

func checkNodeRules(s PoolStatus) Finding {
	r := s.NodeRules
	if r == nil {
		return Finding{"node rules", false, "node not learnt"}
	}
	return Finding{"node rules", r.InPlace, r.Detail}
}

func nodeRulesCommand() *cli.Command {
	return &cli.Command{
		Name:  "node-rules",
		Usage: "show or remove the node-level rules (SNAT, NodePort connmark, fwmark rule) that reconcile keeps",
		Subcommands: []*cli.Command{{
			Name:  "status",
			Usage: "show whether the rules match the configuration (read-only)",
			Flags: []cli.Flag{stateDirFlag(), outputFlag("table")},
			Action: func(c *cli.Context) error {
				node, err := learntNode(c)
				if err != nil {
					return err
				}
				in, err := knobInputs(c)
				if err != nil {
					return err
				}
				s := nodeRulesState(node, in)
				if err := render(c, s, func(t *table) { t.row("IN PLACE", yesNo(s.InPlace)); t.row("DETAIL", s.Detail) }); err != nil {
					return err
				}
				if !s.InPlace {
					return errors.New("node rules are not in place")
				}
				return nil
			},
		}, {
			Name:  "remove",
			Usage: "delete the nftables table and the fwmark rule; stop the reconcile timer first, or the next pass puts them back",
			Flags: []cli.Flag{stateDirFlag()},
			Action: func(c *cli.Context) error {
				st, err := openStore(c)
				if err != nil {
					return err
				}
				unlock, _, err := st.LockReconcile(true, 0)
				if err != nil {
					return fmt.Errorf("taking the reconcile lock: %w", err)
				}
				defer unlock()
				return hostnet.Remove()
			},
		}},
	}
}

func learntNode(c *cli.Context) (store.Node, error) {
	st, err := openStore(c)
	if err != nil {
		return store.Node{}, err
	}
	var node store.Node
	var known bool
	err = st.View(func(tx *store.Tx) (err error) { node, known, err = tx.Node(); return err })
	if err == nil && !known || errors.Is(err, store.ErrNotInitialized) {
		return node, fmt.Errorf("no reconcile has run in %s yet; run 'vpcctl reconcile' first", st.Dir())
	}
	return node, err
}
