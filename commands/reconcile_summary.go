package commands

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"vpc-cni/reconcile"

	"vpc-cni/internal/logfile"
	"vpc-cni/internal/printers"
	"vpc-cni/status"
)

// summaryFormat is reconcile's journal format (-o summary): the timer runs a
// pass every 30 s, and five table lines per pass made ~14,000 journal lines a
// day on a node at rest. A pass that acted (a mutating EC2 call, a finding,
// a failure) is one line; a pass with nothing to do prints nothing.
const summaryFormat = "summary"

// summaryLine is the pass in one line, or "" when it changed nothing.
func summaryLine(rep *reconcile.Report) string {
	if rep == nil || !acted(rep) {
		return ""
	}
	var parts []string
	for _, a := range rep.Plan.Actions {
		parts = append(parts, status.DescribeAction(a))
	}
	for _, f := range rep.Findings {
		parts = append(parts, f.Message)
	}
	for _, f := range rep.Failed {
		parts = append(parts, "FAILED "+f)
	}
	f := rep.Plan.Figures
	return fmt.Sprintf("reconcile: %s; EC2 calls %s; pool %d free, %d assigned, %d total; took %s",
		strings.Join(parts, "; "), printers.CountCalls(rep.Calls), f.Free, f.Assigned, f.Total, rep.Duration.Round(time.Millisecond))
}

// printSummary prints a summary line on stdout: as it is, or with JSON
// logs as a JSON record, so the loop's output is all JSON lines.
func printSummary(c *cli.Context, line string) {
	switch {
	case line == "":
	case jsonLogs(c):
		slog.New(logfile.NewHandler(c.App.Writer, logfile.FormatJSON, slog.LevelInfo)).Info(line)
	default:
		fmt.Fprintln(c.App.Writer, line)
	}
}

// acted reports whether a pass changed anything or has something to say.
func acted(rep *reconcile.Report) bool {
	if len(rep.Findings) > 0 || len(rep.Failed) > 0 {
		return true
	}
	for _, c := range rep.Calls {
		if !strings.HasPrefix(c, "Describe") {
			return true
		}
	}
	return false
}
