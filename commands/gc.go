package commands

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"vpc-cni/podgc"
	"vpc-cni/store"

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
			rep, err := runGC(st, prefix, c.Bool("dry-run"))
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

// runGC treats a never-initialised state dir as nothing to collect.
func runGC(st *store.Store, prefix string, dryRun bool) (podgc.Report, error) {
	rep, err := podgc.Run(st, podgc.Kernel{VethPrefix: prefix}, dryRun, time.Now())
	if errors.Is(err, store.ErrNotInitialized) {
		return rep, nil
	}
	return rep, err
}
