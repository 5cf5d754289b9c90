package commands

import (
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"vpc-cni/internal/printers"
	"vpc-cni/status"
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
		status.LogSummary(fp.Report)
		return true, nil
	case c.String("output") == summaryFormat:
		fmt.Fprintln(c.App.Writer, summaryLine(fp.Report))
		return true, nil
	}
	return true, render(c, fp, func(t *printers.Table) { status.FirstPassRows(t, fp) })
}
