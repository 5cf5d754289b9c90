package commands

import (
	"fmt"
	"log/slog"

	"github.com/urfave/cli/v2"

	"vpc-cni/internal/logfile"
)

// summaryFormat is reconcile's journal format (-o summary): a pass that
// acted (a mutating EC2 call, a finding, a failure) is one line
// (pass.Summary); a pass with nothing to do prints nothing.
const summaryFormat = "summary"

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
