package pass

import (
	"fmt"
	"log/slog"
	"time"

	"vpc-cni/metrics"
	"vpc-cni/podgc"
	"vpc-cni/reconcile"
	"vpc-cni/settings"
	"vpc-cni/status"
	"vpc-cni/store"
)

// collectGarbage runs gc after a pass; its failures are reported, not fatal.
func collectGarbage(st *store.Store, in settings.Inputs, o Options) {
	prefix, err := settings.VethPrefixOf(in)
	gc := podgc.Report{}
	if err == nil {
		gc, err = podgc.Collect(st, prefix, false)
	}
	if err != nil {
		o.Log(slog.LevelWarn, "gc after reconcile: "+err.Error())
		return
	}
	for _, f := range gc.Failed {
		o.Log(slog.LevelWarn, "gc: "+f)
	}
}

// writeMetrics refreshes the metrics file; a failure is reported, not fatal.
func writeMetrics(st *store.Store, in settings.Inputs, o Options) {
	if o.MetricsFile == "" {
		return
	}
	mi, err := status.MetricsInput(st, in, time.Now())
	if err == nil {
		err = metrics.WriteFile(o.MetricsFile, mi)
	}
	if err != nil {
		o.Log(slog.LevelWarn, fmt.Sprintf("metrics: %v", err))
	}
}

// warnChanges says which knobs this process's environment makes act
// differently from the last pass (normally the timer's, which reads the
// file): a hand-run command would otherwise quietly undo the timer's work.
func warnChanges(rep *reconcile.Report, o Options) {
	if rep == nil {
		return
	}
	for _, ch := range settings.FromEnvironment(rep.Changed) {
		o.Log(slog.LevelWarn, fmt.Sprintf("warning: %s; this pass acts on %s from the environment (unset it to act as the timer does)",
			ch, ch.Name))
	}
}
