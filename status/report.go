package status

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"vpc-cni/internal/printers"
	"vpc-cni/reconcile"
)

// ReportRows is a pass's report in table form (`vpcctl reconcile`, `pool warm`).
func ReportRows(t *printers.Table, rep *reconcile.Report) {
	{
		f := rep.Plan.Figures
		t.Row("POLICY", f.Policy)
		t.Row("POOL", fmt.Sprintf("%d free, %d cooling, %d assigned, %d total; shortfall %d, excess %d",
			f.Free, f.Cooling, f.Assigned, f.Total, f.Shortfall, f.Excess))
		if len(rep.Plan.Actions) == 0 {
			t.Row("PLAN", "nothing to do: the pool is at its targets")
		}
		for i, a := range rep.Plan.Actions {
			t.Row(fmt.Sprintf("ACTION %d", i+1), DescribeAction(a))
		}
		verb := "EC2 CALLS"
		if rep.DryRun {
			verb = "WOULD CALL"
		}
		t.Row(verb, printers.CountCalls(rep.Calls))
		for _, f := range rep.Findings {
			t.Row("FOUND", f.Message)
		}
		for _, f := range rep.Failed {
			t.Row("FAILED", f)
		}
		t.Row("TOOK", rep.Duration.Round(time.Millisecond))
	}
}

// LogSummary logs a pass in one line; the whole report stays in the state
// file (pool status, events).
func LogSummary(rep *reconcile.Report) {
	did := make([]string, len(rep.Plan.Actions))
	for i, a := range rep.Plan.Actions {
		did[i] = DescribeAction(a)
	}
	if len(did) == 0 {
		did = append(did, "nothing to do")
	}
	attrs := []any{"pid", os.Getpid(), "did", strings.Join(did, "; "), "ec2Calls", printers.CountCalls(rep.Calls),
		"findings", len(rep.Findings), "took", rep.Duration.Round(time.Millisecond)}
	if len(rep.Failed) > 0 {
		attrs = append(attrs, "failed", strings.Join(rep.Failed, "; "))
	}
	slog.Info("reconcile pass", attrs...)
}

// FirstPassRows is a dry run's table on a node without state: what the adoption would find, then the
// pass's own rows.
func FirstPassRows(t *printers.Table, fp *reconcile.FirstPass) {
	t.Row("DRY RUN", "no state in this state dir yet: the first pass, planned in memory; nothing was written")
	n := fp.Node
	t.Row("NODE", fmt.Sprintf("%s (%s) in %s, %s, subnet %s", n.InstanceID, n.InstanceType, n.AZ, n.VPCID, n.SubnetID))
	for _, e := range fp.ENIs {
		t.Row(fmt.Sprintf("WOULD ADOPT %s", e.ID), fmt.Sprintf("device %d, subnet %s, primary %s, %s: %s",
			e.DeviceIndex, e.SubnetID, e.PrimaryIP, printers.Plural(len(e.Blocks), "block", "blocks"), printers.FirstOf(strings.Join(e.Blocks, ", "), "none")))
	}
	ReportRows(t, fp.Report)
}
