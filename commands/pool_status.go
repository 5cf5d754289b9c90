package commands

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"vpc-cni/internal/printers"
	"vpc-cni/status"
)

func poolStatusCommand() *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "show the node, its ENIs and pods, and how many knobs are set (-o wide: every address and knob)",
		Description: `Examples:
   vpcctl pool status
   vpcctl pool status -o wide     # every address, every knob with its source, default and last pass's value
   vpcctl pool status -o json     # for scripts`,
		Flags:  []cli.Flag{outputFlag("table")},
		Before: noArgs,
		Action: func(c *cli.Context) error {
			s, err := start(c, readOnly)
			if err != nil {
				return err
			}
			view, err := status.Load(s.st, s.in, time.Now())
			if err != nil {
				return err
			}
			if !view.Initialized && (s.format == "table" || s.format == "wide") {
				fmt.Fprintf(c.App.Writer, "no reconcile has run in %s yet; run 'vpcctl reconcile' to learn the node and fill the pool\n", s.st.Dir())
				return nil
			}
			return render(c, view, func(t *printers.Table) { status.Table(t, view) })
		},
	}
}
