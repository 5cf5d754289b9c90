package commands

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"vpc-cni/podgc"

	"vpc-cni/internal/printers"
)

func gcCommand() *cli.Command {
	return &cli.Command{
		Name:  "gc",
		Usage: "release assignments whose network namespace is gone and remove host wiring no pod owns",
		Description: `Run it in the node's network namespace. Reconcile runs it too.

Examples:
   vpcctl gc --dry-run
   vpcctl gc -o json`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "dry-run", Usage: "list what would be removed; remove nothing"},
			outputFlag("table"),
		},
		Before: noArgs,
		Action: func(c *cli.Context) error {
			if _, err := format(c); err != nil {
				return err
			}
			open := openStore
			if c.Bool("dry-run") {
				open = openStateReadOnly
			}
			st, err := open(c)
			if err != nil {
				return err
			}
			in, err := knobInputs(c)
			if err != nil {
				return err
			}
			prefix, err := vethPrefix(in)
			if err != nil {
				return err
			}
			rep, err := podgc.Collect(st, prefix, c.Bool("dry-run"))
			if err != nil {
				return err
			}
			if err := render(c, rep, func(t *printers.Table) { rep.Rows(t, c.Bool("dry-run")) }); err != nil {
				return err
			}
			if len(rep.Failed) > 0 {
				return fmt.Errorf("gc: %s failed: %s", printers.Plural(len(rep.Failed), "removal", "removals"), strings.Join(rep.Failed, "; "))
			}
			return nil
		},
	}
}
