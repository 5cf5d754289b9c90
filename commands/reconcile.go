package commands

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/urfave/cli/v2"

	"vpc-cni/pass"
	"vpc-cni/reconcile"

	"vpc-cni/internal/printers"
	"vpc-cni/status"
)

func reconcileCommand() *cli.Command {
	return &cli.Command{
		Name:  "reconcile",
		Usage: "bring the warm pool to its targets with EC2 (one short pass)",
		Description: `Reads EC2's truth for this node, plans, runs the EC2 calls and records the result.
Run it from a systemd timer or cron; vpcctl pool warm and the plugin start it too.
--timeout bounds the whole pass: the wait for the lock (with --wait), every EC2 and IMDS call,
the SDK's retries and each attempt (a hung endpoint is waited for until the deadline, not less).
Exit codes: 0 done (also when another reconcile holds the lock and --wait was not given),
1 failed (or, with --wait, the lock stayed held for all of --timeout), 2 bad usage or config.

Examples:
   vpcctl reconcile
   vpcctl reconcile --dry-run -o json
   vpcctl reconcile --wait --timeout 2m
   vpcctl reconcile -o summary     # one line if the pass acted, nothing otherwise (the timer's)
   vpcctl reconcile --every 30s -o summary --metrics-listen 10.0.0.5:61678 --health-listen 127.0.0.1:61680   # the DaemonSet's container`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "dry-run", Usage: "print the plan and the EC2 calls it would make; make none"},
			&cli.BoolFlag{Name: "wait", Usage: "wait for another reconcile to finish instead of leaving at once"},
			&cli.DurationFlag{Name: "timeout", Value: 2 * time.Minute, Usage: "deadline for the whole pass"},
			&cli.DurationFlag{Name: "every", Usage: "run a pass every interval until SIGTERM (a container's loop; a failed pass is reported, the loop goes on)"},
			metricsFileFlag,
			metricsListenFlag,
			healthListenFlag,
			policyConfigSocketFlag,
			cniCacheDirFlag(),
			&cli.BoolFlag{Name: "refill", Hidden: true, Usage: "the plugin's detached refill: with the lock held, leave at once when no refill claim stands (a pass that planned since served it)"},
			&cli.BoolFlag{Name: "log-summary", Usage: "log one line (what the pass did, its EC2 calls, how long) instead of printing the report; the plugin's detached passes use it"},
			outputFlag("table"),
		},
		Before: noArgs,
		Action: reconcileAction,
	}
}

// reconcileAction runs one pass, or the loop with --every.
func reconcileAction(c *cli.Context) error {
	if _, err := format(c); err != nil && c.String("output") != summaryFormat {
		return err
	}
	if every := c.Duration("every"); every > 0 {
		if c.Bool("dry-run") {
			return usagef("--every and --dry-run: a loop of dry runs changes nothing; use one")
		}
		return reconcileEvery(c, every, reconcilePass)
	}
	for _, f := range []*cli.StringFlag{metricsListenFlag, healthListenFlag} {
		if c.String(f.Name) != "" {
			return usagef("--%s serves a loop's metrics or health: it needs --every", f.Name)
		}
	}
	return reconcilePass(c)
}

// reconcilePass is one pass, reported in the -o format.
func reconcilePass(c *cli.Context) error {
	summary := c.String("output") == summaryFormat
	if _, err := format(c); err != nil && !summary {
		return err
	}
	if c.Bool("dry-run") {
		if handled, err := dryRunFresh(c); handled {
			return err
		}
	}
	rep, err := runReconcile(c, c.Bool("dry-run"), c.Bool("wait"))
	if rep != nil && c.Bool("log-summary") {
		status.LogSummary(rep)
		return err
	}
	if summary {
		printSummary(c, pass.Summary(rep))
		return err
	}
	if rep != nil && (err == nil || rep.Plan.Figures.Policy != "") { // a pass that failed before planning has no plan to show
		if rerr := renderReport(c, rep); rerr != nil {
			return rerr
		}
	}
	return err
}

// runReconcile is one pass (pass.Run), or with dryRun one planned in memory.
func runReconcile(c *cli.Context, dryRun, wait bool) (*reconcile.Report, error) {
	mode := writable
	if dryRun {
		mode = readOnly
	}
	s, err := openSession(c, mode)
	if err != nil {
		return nil, err
	}
	ctx, cancel := pass.Context(c.Context, c.Duration("timeout"))
	defer cancel()
	o := passOptions(c)
	o.Wait = wait
	if dryRun {
		return pass.DryRun(ctx, s.st, s.in, o)
	}
	return pass.Run(ctx, s.st, s.in, o)
}

// passOptions are a pass's options from c's flags.
func passOptions(c *cli.Context) pass.Options {
	return pass.Options{Timeout: c.Duration("timeout"), Refill: c.Bool("refill"), CNICacheDir: cniCacheDir(c),
		MetricsFile: c.String(metricsFileFlag.Name), NewRunner: newRunner,
		Log: func(level slog.Level, msg string) { stderrLine(c, level, msg) }}
}

// dryRunFresh is `reconcile --dry-run` on a node without state (pass.Fresh).
// handled is false when the node has state: the usual dry run runs.
func dryRunFresh(c *cli.Context) (handled bool, err error) {
	in, err := knobInputs(c)
	if err != nil {
		return true, err
	}
	ctx, cancel := pass.Context(c.Context, c.Duration("timeout"))
	defer cancel()
	fp, err := pass.Fresh(ctx, stateDir(c), in, passOptions(c))
	switch {
	case err != nil:
		return true, err
	case fp == nil:
		return false, nil
	case c.Bool("log-summary"):
		status.LogSummary(fp.Report)
		return true, nil
	case c.String("output") == summaryFormat:
		fmt.Fprintln(c.App.Writer, pass.Summary(fp.Report))
		return true, nil
	}
	return true, render(c, fp, func(t *printers.Table) { status.FirstPassRows(t, fp) })
}

func renderReport(c *cli.Context, rep *reconcile.Report) error {
	return render(c, rep, func(t *printers.Table) { status.ReportRows(t, rep) })
}
