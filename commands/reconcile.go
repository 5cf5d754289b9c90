package commands

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"vpc-cni/plugin"
	"vpc-cni/podgc"
	"vpc-cni/rebuild"
	"vpc-cni/reconcile"
	"vpc-cni/settings"
	"vpc-cni/store"

	"vpc-cni/internal/nice"
	"vpc-cni/internal/printers"
	"vpc-cni/internal/usage"
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
		printSummary(c, summaryLine(rep))
		return err
	}
	if rep != nil && (err == nil || rep.Plan.Figures.Policy != "") { // a pass that failed before planning has no plan to show
		if rerr := renderReport(c, rep); rerr != nil {
			return rerr
		}
	}
	return err
}

// runReconcile takes the lock (unless dry-run) and makes one pass. A held
// lock without --wait is not a failure: the other pass does the work.
func runReconcile(c *cli.Context, dryRun, wait bool) (*reconcile.Report, error) {
	if c.Bool("refill") {
		// The plugin niced this process's first thread; every other one
		// follows, whatever the runtime started before that.
		if err := nice.Self(plugin.RefillNice); err != nil {
			slog.Warn("refill not reniced", "err", err)
		}
	}
	mode := writable
	if dryRun {
		mode = readOnly
	}
	s, err := openSession(c, mode)
	if err != nil {
		return nil, err
	}
	st := s.st
	ctx, cancel := passContext(c.Context, c.Duration("timeout"))
	defer cancel()
	if c.Bool("refill") {
		gatherBurst(ctx, st)
	}
	if dryRun {
		return dryRunPass(ctx, c, s)
	}
	unlock, run, err := holdLock(c, st, wait)
	if err != nil {
		recordStopped(c, st, err)
	}
	if err != nil || !run {
		return nil, err
	}
	defer unlock()
	return lockedPass(ctx, c, s)
}

// dryRunPass plans in memory and changes nothing.
func dryRunPass(ctx context.Context, c *cli.Context, s session) (*reconcile.Report, error) {
	runner, err := newRunner(ctx, s.st, s.in) // per-attempt HTTP timeouts come from ctx's deadline
	if err != nil {
		return nil, classifyRunError(ctx, err)
	}
	rep, err := runner.Run(ctx, reconcile.Options{DryRun: true})
	warnChanges(c, rep)
	return rep, classifyRunError(ctx, err)
}

// lockedPass is a pass with the reconcile lock held, then gc and metrics. A
// pass stopped before it began (a bad value) is recorded like a failed pass,
// and gc, which reads the same value, is not run; a report with FAILED
// steps is the exit status too, so a timer or a script sees it.
func lockedPass(ctx context.Context, c *cli.Context, s session) (*reconcile.Report, error) {
	rep, err := passRecovering(ctx, c, s.st, s.in, reconcile.Options{})
	if rep == nil && err != nil {
		recordStopped(c, s.st, err)
		return nil, classifyRunError(ctx, err)
	}
	warnChanges(c, rep)
	collectGarbage(c, s.st)
	writeMetricsAfterPass(c, s.st)
	if err == nil && rep != nil && len(rep.Failed) > 0 {
		return rep, fmt.Errorf("the pass ended with %s: %s", printers.Plural(len(rep.Failed), "failed step", "failed steps"),
			strings.Join(rep.Failed, "; "))
	}
	return rep, classifyRunError(ctx, err)
}

// recordStopped leaves the trace of a pass that did not start; failing to
// leave it is said, not fatal.
func recordStopped(c *cli.Context, st *store.Store, err error) {
	if usage.Is(err) {
		err = reconcile.ConfigError{Err: err} // a bad value, wherever it was read
	}
	if rerr := reconcile.RecordStopped(st, err, time.Now()); rerr != nil {
		stderrLine(c, slog.LevelWarn, "recording the stopped pass: "+rerr.Error())
	}
}

// holdLock takes the reconcile lock for a pass. run is false when no pass
// is due: another reconcile holds the lock, or the refill this process was
// started for has been served (the lock is then released at once).
func holdLock(c *cli.Context, st *store.Store, wait bool) (unlock func(), run bool, err error) {
	unlock, held, err := st.LockReconcile(wait, c.Duration("timeout"))
	if err != nil {
		return nil, false, fmt.Errorf("taking the reconcile lock %s: %w", st.ReconcileLockPath(), err)
	}
	if !held && wait {
		return nil, false, fmt.Errorf("%w %s for all of --timeout %s; this pass did not run",
			reconcile.ErrLockHeld, st.ReconcileLockPath(), c.Duration("timeout"))
	}
	if !held {
		stderrLine(c, slog.LevelInfo, "another reconcile holds the lock; it will do the work (use --wait to queue)")
		return nil, false, nil
	}
	if c.Bool("refill") && refillServed(st) {
		slog.Info("refill already served by a pass that planned since it was claimed; lock released at once", "pid", os.Getpid())
		unlock()
		return nil, false, nil
	}
	return unlock, true, nil
}

// gatherBurst holds the detached refill back, the lock not taken, while the
// burst that started it goes on (store.RefillQuiet, store.RefillGather).
func gatherBurst(ctx context.Context, st *store.Store) {
	for {
		var wait time.Duration
		if err := st.View(func(tx *store.Tx) error { wait = tx.RefillWait(time.Now()); return nil }); err != nil || wait <= 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// refillServed: no refill claim stands any more, so a pass planned after
// the ADD that started this one; a pass here would find nothing to do and
// hold the lock that waiting ADDs want.
func refillServed(st *store.Store) bool {
	claimed := true
	err := st.View(func(tx *store.Tx) error { claimed = tx.RefillClaimed(time.Now()); return nil })
	return err == nil && !claimed
}

func renderReport(c *cli.Context, rep *reconcile.Report) error {
	return render(c, rep, func(t *printers.Table) { status.ReportRows(t, rep) })
}

// passRecovering runs a pass through rebuild.Pass: a lost state file is
// rebuilt (from EC2, or IMDS in IMDS-only mode, and the kernel) before the
// pass plans, so no running pod's address is planned as free. The caller
// holds the reconcile lock.
func passRecovering(ctx context.Context, c *cli.Context, st *store.Store, in settings.Inputs, opts reconcile.Options) (*reconcile.Report, error) {
	prefix, err := settings.VethPrefixOf(in)
	if err != nil {
		return nil, asUsage(err)
	}
	rep, rebuilt, lost, err := rebuild.Pass(ctx, st, rebuild.PassOptions{Pass: opts, Options: rebuild.Options{
		CNICacheDir: cniCacheDir(c), VethPrefix: prefix,
		NewRunner: func() (*reconcile.Runner, error) { return newRunner(ctx, st, in) }}})
	if rebuilt != nil {
		stderrLine(c, slog.LevelWarn, fmt.Sprintf("%s wiring found with no state: rebuilt from EC2 and the kernel, %s restored",
			printers.Plural(lost.Pods, "running pod's", "running pods'"), printers.Plural(rebuilt.Restored(), "pod", "pods")))
		for _, f := range rebuilt.Failed {
			stderrLine(c, slog.LevelWarn, "rebuild: "+f)
		}
	}
	return rep, err
}

// collectGarbage runs gc after a pass; its failures are reported, not fatal.
func collectGarbage(c *cli.Context, st *store.Store) {
	in, err := knobInputs(c)
	prefix := ""
	if err == nil {
		prefix, err = vethPrefix(in)
	}
	gc := podgc.Report{}
	if err == nil {
		gc, err = runGC(st, prefix, false)
	}
	if err != nil {
		stderrLine(c, slog.LevelWarn, "gc after reconcile: "+err.Error())
		return
	}
	for _, f := range gc.Failed {
		stderrLine(c, slog.LevelWarn, "gc: "+f)
	}
}
