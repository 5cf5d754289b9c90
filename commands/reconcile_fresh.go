package commands

import (
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"vpc-cni/internal/printers"
	"vpc-cni/reconcile"
	"vpc-cni/store"
)

// dryRunFresh is `reconcile --dry-run` on a node without state: the first
// pass planned in memory from IMDS and EC2, so an operator sees what it
// would do to the node's ENIs before it does it. It creates no directory or
// file. handled is false when the node has state: the usual dry run runs.
func dryRunFresh(c *cli.Context) (handled bool, err error) {
	dir := stateDir(c)
	if _, err := store.Open(dir, store.Options{ReadOnly: true}); !errors.Is(err, store.ErrNotInitialized) {
		return false, nil
	}
	in, err := knobInputs(c)
	if err != nil {
		return true, err
	}
	ctx, cancel := passContext(c.Context, c.Duration("timeout"))
	defer cancel()
	runner, err := newRunner(ctx, store.Absent(dir), in)
	if err != nil {
		return true, classifyRunError(ctx, err)
	}
	fp, err := runner.PlanFirstPass(ctx)
	warnChanges(c, fp.Report)
	switch {
	case err != nil:
		return true, classifyRunError(ctx, err)
	case c.Bool("log-summary"):
		logSummary(fp.Report)
		return true, nil
	case c.String("output") == summaryFormat:
		fmt.Fprintln(c.App.Writer, summaryLine(fp.Report))
		return true, nil
	}
	return true, render(c, fp, func(t *printers.Table) { firstPassRows(t, fp) })
}

// firstPassRows is the table: what the adoption would find, then the
// pass's own rows.
func firstPassRows(t *printers.Table, fp *reconcile.FirstPass) {
	t.Row("DRY RUN", "no state in this state dir yet: the first pass, planned in memory; nothing was written")
	n := fp.Node
	t.Row("NODE", fmt.Sprintf("%s (%s) in %s, %s, subnet %s", n.InstanceID, n.InstanceType, n.AZ, n.VPCID, n.SubnetID))
	for _, e := range fp.ENIs {
		t.Row(fmt.Sprintf("WOULD ADOPT %s", e.ID), fmt.Sprintf("device %d, subnet %s, primary %s, %d blocks: %s",
			e.DeviceIndex, e.SubnetID, e.PrimaryIP, len(e.Blocks), printers.FirstOf(join(e.Blocks), "none")))
	}
	reportRows(t, fp.Report)
}
