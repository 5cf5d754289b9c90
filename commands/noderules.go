package commands

import (
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"vpc-cni/hostnet"
	"vpc-cni/internal/printers"
	"vpc-cni/pool"
	"vpc-cni/status"
	"vpc-cni/store"
)

func nodeRulesCommand() *cli.Command {
	return &cli.Command{
		Name:  "node-rules",
		Usage: "show or remove the node-level rules (SNAT, NodePort connmark, fwmark rule) that reconcile keeps",
		Subcommands: []*cli.Command{{
			Name:  "status",
			Usage: "show whether the rules match the configuration (read-only)",
			Flags: []cli.Flag{outputFlag("table")},
			Action: func(c *cli.Context) error {
				node, snap, err := learntPool(c)
				if err != nil {
					return err
				}
				in, err := knobInputs(c)
				if err != nil {
					return err
				}
				s := status.NodeRules(node, snap, in)
				if err := render(c, s, func(t *printers.Table) {
					t.Row("IN PLACE", printers.YesNo(s.InPlace))
					t.Row("DETAIL", s.Detail)
				}); err != nil {
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
			Flags: nil,
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

// learntPool is the node and pool the last pass recorded; read-only, so a
// mistyped --state-dir creates nothing.
func learntPool(c *cli.Context) (store.Node, pool.Snapshot, error) {
	st, err := openStateReadOnly(c)
	if err != nil {
		return store.Node{}, pool.Snapshot{}, err
	}
	return status.LearntPool(st)
}
