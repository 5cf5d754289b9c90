package commands

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"vpc-cni/doctor"
	"vpc-cni/iamcheck"
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

With --iam, instead: whether the node's role allows every EC2 action its configuration needs,
with one authorization check per action (DryRun=true; a probe EC2 refuses without a change where
EC2 has no DryRun). Each denied action is printed with the statement of deploy/iam-policy.json to
add; exit 1 when any is not allowed. It changes nothing and needs no state file.

Examples:
   vpcctl doctor
   vpcctl doctor -o json
   vpcctl doctor --iam`,
		Flags: []cli.Flag{outputFlag("table"),
			&cli.StringFlag{Name: "kubelet-config", Value: maxpods.KubeletConfig, Usage: "the kubelet's --config `FILE`, to compare its maxPods with what the node holds"},
			&cli.BoolFlag{Name: "iam", Usage: "check the node's IAM permissions for every EC2 action its configuration needs (one request each, no change)"},
			&cli.StringFlag{Name: "kubelet-config-dir", Value: maxpods.KubeletConfigDir, Usage: "the kubelet's --config-dir of drop-ins (read after --kubelet-config, in name order)"},
		},
		Before: noArgs,
		Action: doctorAction,
	}
}

// doctorAction runs the checks (or --iam's) and exits 1 on the first failed one.
func doctorAction(c *cli.Context) error {
	if c.Bool("iam") {
		return doctorIAM(c)
	}
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
}

// doctorIAM is `doctor --iam`: the knobs as every process reads them, no
// state file needed (install runs it before the first pass).
func doctorIAM(c *cli.Context) error {
	if _, err := format(c); err != nil {
		return err
	}
	in, err := knobInputs(c)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.Context, iamCheckTimeout)
	defer cancel()
	rep, err := iamcheck.Node(ctx, in, stateDir(c), "vpc-cni/"+buildVersion)
	if err != nil {
		return fmt.Errorf("doctor --iam: %w", err)
	}
	if err := render(c, rep, func(t *printers.Table) { rep.Rows(t) }); err != nil {
		return err
	}
	if f, _ := format(c); (f == "table" || f == "wide") && rep.OK() {
		fmt.Fprintln(c.App.Writer, rep.Summary())
	} else if f == "table" || f == "wide" {
		if err := rep.WriteAdd(c.App.Writer); err != nil {
			return err
		}
	}
	if !rep.OK() {
		return fmt.Errorf("doctor --iam: %s", rep.Summary())
	}
	return nil
}

// iamCheckTimeout bounds the handful of calls of the IAM check.
const iamCheckTimeout = time.Minute
