// Package pass is one reconcile pass as the CLI runs it: under the
// reconcile lock, lost state rebuilt first, gc and the metrics file after,
// its deadline named in its errors; or planned in memory (a dry run).
package pass

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"vpc-cni/internal/nice"
	"vpc-cni/internal/printers"
	"vpc-cni/internal/usage"
	"vpc-cni/plugin"
	"vpc-cni/rebuild"
	"vpc-cni/reconcile"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// Options are a pass's, as the command line gives them.
type Options struct {
	Timeout     time.Duration // the whole pass, the wait for the lock included
	Wait        bool          // queue behind another pass instead of leaving it the work
	Refill      bool          // the plugin's detached refill: reniced, gathers its burst
	CNICacheDir string        // the runtime's names for the pods of a lost state
	MetricsFile string        // the textfile collector's file, refreshed after the pass
	NewRunner   func(context.Context, *store.Store, settings.Inputs) (*reconcile.Runner, error)
	Log         func(level slog.Level, msg string) // what the pass has to say besides its report
}

// Run takes the lock and makes one pass; ctx is bounded by Context. A held
// lock without Wait is not a failure (nil report): the other pass does the
// work. A report with failed steps is the error too, so a timer or a script
// sees it.
func Run(ctx context.Context, st *store.Store, in settings.Inputs, o Options) (*reconcile.Report, error) {
	if o.Refill {
		// The plugin niced this process's first thread; every other one
		// follows, whatever the runtime started before that.
		if err := nice.Self(plugin.RefillNice); err != nil {
			slog.Warn("refill not reniced", "err", err)
		}
		gatherBurst(ctx, st)
	}
	unlock, run, err := holdLock(st, o)
	if err != nil {
		recordStopped(st, err, o)
	}
	if err != nil || !run {
		return nil, err
	}
	defer unlock()
	return locked(ctx, st, in, o)
}

// locked is a pass with the lock held, then gc and metrics. A pass stopped
// before it began (a bad value) is recorded like a failed pass, and gc,
// which reads the same value, is not run.
func locked(ctx context.Context, st *store.Store, in settings.Inputs, o Options) (*reconcile.Report, error) {
	rep, err := Recovering(ctx, st, in, o)
	if rep == nil && err != nil {
		recordStopped(st, err, o)
		return nil, Classify(ctx, err)
	}
	warnChanges(rep, o)
	collectGarbage(st, in, o)
	writeMetrics(st, in, o)
	if err == nil && rep != nil && len(rep.Failed) > 0 {
		return rep, fmt.Errorf("the pass ended with %s: %s", printers.Plural(len(rep.Failed), "failed step", "failed steps"),
			strings.Join(rep.Failed, "; "))
	}
	return rep, Classify(ctx, err)
}

// recordStopped leaves the trace of a pass that did not start; failing to
// leave it is said, not fatal.
func recordStopped(st *store.Store, err error, o Options) {
	if usage.Is(err) {
		err = reconcile.ConfigError{Err: err} // a bad value, wherever it was read
	}
	if rerr := reconcile.RecordStopped(st, err, time.Now()); rerr != nil {
		o.Log(slog.LevelWarn, "recording the stopped pass: "+rerr.Error())
	}
}

// holdLock takes the reconcile lock for a pass. run is false when no pass
// is due: another reconcile holds the lock, or the refill this process was
// started for has been served (the lock is then released at once).
func holdLock(st *store.Store, o Options) (unlock func(), run bool, err error) {
	unlock, held, err := st.LockReconcile(o.Wait, o.Timeout)
	if err != nil {
		return nil, false, fmt.Errorf("taking the reconcile lock %s: %w", st.ReconcileLockPath(), err)
	}
	if !held && o.Wait {
		return nil, false, fmt.Errorf("%w %s for all of --timeout %s; this pass did not run",
			reconcile.ErrLockHeld, st.ReconcileLockPath(), o.Timeout)
	}
	if !held {
		o.Log(slog.LevelInfo, "another reconcile holds the lock; it will do the work (use --wait to queue)")
		return nil, false, nil
	}
	if o.Refill && refillServed(st) {
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

// Recovering runs a pass through rebuild.Pass: a lost state file is
// rebuilt (from EC2, or IMDS in IMDS-only mode, and the kernel) before the
// pass plans, so no running pod's address is planned as free. The caller
// holds the reconcile lock.
func Recovering(ctx context.Context, st *store.Store, in settings.Inputs, o Options) (*reconcile.Report, error) {
	prefix, err := settings.VethPrefixOf(in)
	if err != nil {
		return nil, usage.Wrap(err)
	}
	rep, rebuilt, lost, err := rebuild.Pass(ctx, st, rebuild.PassOptions{Options: rebuild.Options{
		CNICacheDir: o.CNICacheDir, VethPrefix: prefix,
		NewRunner: func() (*reconcile.Runner, error) { return o.NewRunner(ctx, st, in) }}})
	if rebuilt != nil {
		o.Log(slog.LevelWarn, fmt.Sprintf("%s wiring found with no state: rebuilt from EC2 and the kernel, %s restored",
			printers.Plural(lost.Pods, "running pod's", "running pods'"), printers.Plural(rebuilt.Restored(), "pod", "pods")))
		for _, f := range rebuilt.Failed {
			o.Log(slog.LevelWarn, "rebuild: "+f)
		}
	}
	return rep, err
}
