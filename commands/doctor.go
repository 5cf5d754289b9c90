package commands

import (
	"errors"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"vpc-cni/doctor"
	"vpc-cni/internal/printers"
	"vpc-cni/maxpods"
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
		Flags: []cli.Flag{outputFlag("table"),
			&cli.StringFlag{Name: "kubelet-config", Value: maxpods.KubeletConfig, Usage: "the kubelet's --config `FILE`, to compare its maxPods with what the node holds"},
			&cli.StringFlag{Name: "kubelet-config-dir", Value: maxpods.KubeletConfigDir, Usage: "the kubelet's --config-dir of drop-ins (read after --kubelet-config, in name order)"},
		},
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
				rep = append(rep, doctor.CheckKubeletMaxPods(s.st, s.in,
					doctor.Kubelet{Config: c.String("kubelet-config"), DropInDir: c.String("kubelet-config-dir")})...)
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
