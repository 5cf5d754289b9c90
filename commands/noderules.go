package commands

import (
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"vpc-cni/internal/printers"
	"vpc-cni/noderules"
	"vpc-cni/pool"
	"vpc-cni/settings"
	"vpc-cni/status"
	"vpc-cni/store"
)

func nodeRulesCommand() *cli.Command {
	return &cli.Command{
		Name:  "node-rules",
		Usage: "show or remove the node-level rules (SNAT, NodePort connmark, fwmark rule) that reconcile keeps",
		Subcommands: []*cli.Command{{
			Name:   "status",
			Usage:  "show whether the rules match the configuration (read-only)",
			Flags:  []cli.Flag{outputFlag("table")},
			Action: nodeRulesStatus,
		}, {
			Name: "sysctls",
			Usage: "set the kernel settings the node rules need (rp_filter, IPv6 forwarding) from the node the last " +
				"pass learnt, without EC2; the boot unit runs it, as the timer's passes may not write /proc/sys",
			Action: setNodeSysctls,
		}, {
			Name:   "remove",
			Usage:  "delete the nftables table and the fwmark rule; stop the reconcile timer first, or the next pass puts them back",
			Action: removeNodeRules,
		}},
	}
}

// nodeRulesStatus prints whether the rules are in place; exit 1 when they
// should be and are not (or cannot be read).
func nodeRulesStatus(c *cli.Context) error {
	node, snap, in, err := learntRulesInputs(c)
	if err != nil {
		return err
	}
	s := status.NodeRules(node, snap, in)
	if err := render(c, s, func(t *printers.Table) {
		t.Row("STATE", s.State)
		t.Row("DETAIL", s.Detail)
	}); err != nil {
		return err
	}
	if s.Fault() {
		return errors.New("node rules are " + s.State)
	}
	return nil
}

// removeNodeRules deletes the rules (noderules.Remove), naming each.
func removeNodeRules(c *cli.Context) error {
	st, err := openStore(c)
	if err != nil {
		return err
	}
	removed, err := noderules.Remove(st)
	for _, r := range removed {
		fmt.Fprintln(c.App.Writer, "removed", r)
	}
	if err == nil && len(removed) == 0 {
		fmt.Fprintln(c.App.Writer, "nothing to remove: no node-level rule of vpc-cni in this network namespace")
	}
	return err
}

// learntRulesInputs is what the node rules are computed from: the node and
// pool the last pass recorded, and the knobs as this process reads them.
func learntRulesInputs(c *cli.Context) (store.Node, pool.Snapshot, settings.Inputs, error) {
	node, snap, err := learntPool(c)
	if err != nil {
		return node, snap, settings.Inputs{}, err
	}
	in, err := knobInputs(c)
	return node, snap, in, err
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

// setNodeSysctls sets the node's sysctls (noderules.Sysctls), naming each.
func setNodeSysctls(c *cli.Context) error {
	node, snap, in, err := learntRulesInputs(c)
	if err != nil {
		return err
	}
	set, here, err := noderules.Sysctls(node, snap, in)
	if err == nil && !here {
		fmt.Fprintln(c.App.Writer, "not managed here: no link has the primary ENI's MAC "+node.PrimaryMAC)
		return nil
	}
	for _, s := range set {
		fmt.Fprintln(c.App.Writer, "set        "+s)
	}
	if err == nil && len(set) == 0 {
		fmt.Fprintln(c.App.Writer, "unchanged  the node's sysctls")
	}
	return err
}
