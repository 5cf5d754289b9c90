package commands

import (
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"vpc-cni/hostnet"
	"vpc-cni/internal/printers"
	"vpc-cni/pool"
	"vpc-cni/reconcile"
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

// removeNodeRules deletes the rules, under the reconcile lock, in the
// node's namespace only, naming each it removed.
func removeNodeRules(c *cli.Context) error {
	st, err := openStore(c)
	if err != nil {
		return err
	}
	unlock, _, err := st.LockReconcile(true, 0)
	if err != nil {
		return fmt.Errorf("taking the reconcile lock: %w", err)
	}
	defer unlock()
	if err := inNodeNamespace(st); err != nil {
		return err
	}
	removed, err := hostnet.Remove()
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

// setNodeSysctls sets the node's sysctls; a namespace without the primary
// ENI's link is not this node's to set.
func setNodeSysctls(c *cli.Context) error {
	node, snap, in, err := learntRulesInputs(c)
	if err != nil {
		return err
	}
	cfg, err := reconcile.NodeRulesConfig(node, snap, in)
	if err != nil {
		return err
	}
	if cfg.PrimaryIf == "" {
		fmt.Fprintln(c.App.Writer, "not managed here: no link has the primary ENI's MAC "+node.PrimaryMAC)
		return nil
	}
	set, err := hostnet.EnsureSysctls(cfg)
	for _, s := range set {
		fmt.Fprintln(c.App.Writer, "set        "+s)
	}
	if err == nil && len(set) == 0 {
		fmt.Fprintln(c.App.Writer, "unchanged  the node's sysctls")
	}
	return err
}
