package commands

import (
	"errors"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"vpc-cni/doctor"
	"vpc-cni/internal/printers"
	"vpc-cni/store"
)

func doctorCommand() *cli.Command {
	return &cli.Command{
		Name:  "doctor",
		Usage: "check the node state, the last reconcile and the host wiring; exit 1 if something is wrong",
		Description: `Read-only. Each line says what was checked and what was found; a failed line names the
command or pass that repairs it, where one does. The state file is read page by page (its size,
each page header, every bucket and value, then bbolt's own check), up to the first fault.

Examples:
   vpcctl doctor
   vpcctl doctor -o json`,
		Flags:  []cli.Flag{stateDirFlag(), outputFlag("table")},
		Before: noArgs,
		Action: func(c *cli.Context) error {
			s, err := start(c, readOnly)
			rep, lost := doctor.Report(nil), false
			if errors.Is(err, store.ErrNotInitialized) {
				rep, lost = doctor.WithoutState() // running pods' wiring with no state file: say so
			}
			if err != nil && !lost {
				return err
			}
			if !lost {
				rep = doctor.Run(s.st, s.in, time.Now())
			}
			if err := render(c, rep, func(t *printers.Table) { rep.Rows(t) }); err != nil {
				return err
			}
			if f := rep.Failed(); f != nil {
				return fmt.Errorf("doctor: %s: %s", f.Check, f.Detail)
			}
			return nil
		},
	}
}
