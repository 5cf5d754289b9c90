package commands

import (
	"time"

	"github.com/urfave/cli/v2"

	"vpc-cni/reconcile"
	"vpc-cni/settings"
	"vpc-cni/warm"

	"vpc-cni/internal/printers"
	"vpc-cni/status"
)

func poolCommand() *cli.Command {
	return &cli.Command{
		Name:        "pool",
		Usage:       "show and size the warm pool",
		Subcommands: []*cli.Command{poolStatusCommand(), poolWarmCommand()},
	}
}

func poolWarmCommand() *cli.Command {
	var flags []cli.Flag
	for _, t := range warm.Targets {
		flags = append(flags, &cli.IntFlag{Name: t.Flag, Usage: "persist " + t.Knob + " for this node", DefaultText: "unchanged"})
	}
	flags = append(flags,
		&cli.BoolFlag{Name: "reset", Usage: "drop every persisted override (the environment and defaults apply again)"},
		&cli.BoolFlag{Name: "no-reconcile", Usage: "only persist; let the next reconcile act on it"},
		&cli.DurationFlag{Name: "timeout", Value: 2 * time.Minute, Usage: "deadline for the reconcile"},
		outputFlag("table"))
	return &cli.Command{
		Name:  "warm",
		Usage: "persist warm-pool targets for this node and reconcile at once",
		Description: `Overrides win over the environment, the configuration file and the defaults
until --reset.

Exit codes: 0 saved and reconciled; 1 not saved, or saved but the reconcile failed (the
message says which: a saved override stays in force and the next reconcile acts on it);
2 bad usage or configuration, also when a configuration error stopped the reconcile.

Examples:
   vpcctl pool warm --ip-target 5               # keep exactly 5 free addresses
   vpcctl pool warm --ip-target 5 --min-ip-target 10
   vpcctl pool warm --reset --no-reconcile`,
		Flags:  flags,
		Before: noArgs,
		Action: poolWarm,
	}
}

func poolWarm(c *cli.Context) error {
	if _, err := format(c); err != nil {
		return err
	}
	given, err := overridesFromFlags(c)
	if err != nil {
		return err
	}
	if given.Empty() && !c.Bool("reset") {
		return usagef("pool warm: give at least one of --ip-target, --min-ip-target, --eni-target, --prefix-target, or --reset")
	}
	s, err := openSession(c, writable)
	if err != nil {
		return err
	}
	o := warm.Options{Given: given, Reset: c.Bool("reset"), Timeout: c.Duration("timeout"), CNICacheDir: cniCacheDir(c),
		NewRunner: newRunner}
	if !c.Bool("no-reconcile") {
		o.Reconcile = func() (*reconcile.Report, error) { return runReconcile(c, false, true) }
	}
	out, err := warm.Run(c.Context, s.st, s.in, o)
	if err != nil {
		return err
	}
	return render(c, out, func(t *printers.Table) {
		if out.Reconcile != nil {
			status.ReportRows(t, out.Reconcile)
			t.Blank()
		}
		if out.Pool.Initialized {
			status.Table(t, out.Pool) // ends with every knob and its source
			return
		}
		status.KnobRows(t, "", status.Knobs(out.Knobs, nil))
	})
}

func overridesFromFlags(c *cli.Context) (settings.Overrides, error) {
	var o settings.Overrides
	for _, t := range warm.Targets {
		if !c.IsSet(t.Flag) {
			continue
		}
		n := c.Int(t.Flag)
		if n < 0 {
			return o, usagef("--%s %d: must be 0 or more", t.Flag, n)
		}
		*t.Field(&o) = &n
	}
	return o, nil
}
