package commands

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"vpc-cni/pass"
	"vpc-cni/rebuild"
	"vpc-cni/reconcile"
	"vpc-cni/settings"
	"vpc-cni/store"

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

// targetFlags maps each `pool warm` flag to the knob it overrides.
var targetFlags = []struct {
	flag, knob string
	field      func(*settings.Overrides) **int
}{
	{"ip-target", settings.WarmIPTarget, func(o *settings.Overrides) **int { return &o.WarmIP }},
	{"min-ip-target", settings.MinIPTarget, func(o *settings.Overrides) **int { return &o.MinIP }},
	{"eni-target", settings.WarmENITarget, func(o *settings.Overrides) **int { return &o.WarmENI }},
	{"prefix-target", settings.WarmPrefixTarget, func(o *settings.Overrides) **int { return &o.WarmPrefix }},
}

func poolWarmCommand() *cli.Command {
	var flags []cli.Flag
	for _, tf := range targetFlags {
		flags = append(flags, &cli.IntFlag{Name: tf.flag, Usage: "persist " + tf.knob + " for this node", DefaultText: "unchanged"})
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
	if err := ensureState(c, s); err != nil {
		return fmt.Errorf("pool warm: nothing saved: %w", err)
	}
	eff, err := persistOverrides(s.st, s.in, given, c.Bool("reset"))
	if err != nil {
		return err
	}
	var rep *reconcile.Report
	if !c.Bool("no-reconcile") {
		if rep, err = runReconcile(c, false, true); err != nil {
			return fmt.Errorf("pool warm: saved %s (it stays in force; the next reconcile acts on it), "+
				"but reconciling now failed: %w", describeOverrides(given, c.Bool("reset")), err)
		}
	}
	view, err := status.Load(s.st, s.in, time.Now())
	if err != nil {
		return err
	}
	return renderWarm(c, eff, rep, view)
}

// renderWarm shows the knobs saved, the pass run, and the pool after it.
func renderWarm(c *cli.Context, eff settings.Effective, rep *reconcile.Report, view status.PoolStatus) error {
	out := struct {
		Knobs     []settings.Value  `json:"knobs"`
		Reconcile *reconcile.Report `json:"reconcile,omitempty"`
		Pool      status.PoolStatus `json:"pool"`
	}{eff.Values, rep, view}
	return render(c, out, func(t *printers.Table) {
		if rep != nil {
			status.ReportRows(t, rep)
			t.Blank()
		}
		if view.Initialized {
			status.Table(t, view) // ends with every knob and its source
			return
		}
		status.KnobRows(t, "", status.Knobs(eff.Values, nil))
	})
}

// describeOverrides names what pool warm saved: "WARM_IP_TARGET=4", "the reset".
func describeOverrides(given settings.Overrides, reset bool) string {
	var parts []string
	if reset {
		parts = append(parts, "the reset of every override")
	}
	for _, tf := range targetFlags {
		if v := *tf.field(&given); v != nil {
			parts = append(parts, fmt.Sprintf("%s=%d", tf.knob, *v))
		}
	}
	return strings.Join(parts, ", ")
}

func overridesFromFlags(c *cli.Context) (settings.Overrides, error) {
	var o settings.Overrides
	for _, tf := range targetFlags {
		if !c.IsSet(tf.flag) {
			continue
		}
		n := c.Int(tf.flag)
		if n < 0 {
			return o, usagef("--%s %d: must be 0 or more", tf.flag, n)
		}
		*tf.field(&o) = &n
	}
	return o, nil
}

// persistOverrides validates the new overrides against the whole
// configuration before writing them, so a bad combination changes nothing.
func persistOverrides(st *store.Store, in settings.Inputs, given settings.Overrides, reset bool) (settings.Effective, error) {
	var eff settings.Effective
	err := st.Update(func(tx *store.Tx) error {
		s, err := tx.Settings()
		if err != nil {
			return err
		}
		merged := s.Overrides
		if reset {
			merged = settings.Overrides{}
		}
		for _, tf := range targetFlags {
			if v := *tf.field(&given); v != nil {
				*tf.field(&merged) = v
			}
		}
		if eff, err = settings.Resolve(merged, in); err != nil {
			return asUsage(err)
		}
		s.Overrides = merged
		s.UpdatedAt = time.Now()
		return tx.PutSettings(s)
	})
	if err != nil {
		return eff, fmt.Errorf("pool warm: %w", err)
	}
	return eff, nil
}

// ensureState gives a node without a state file one before the overrides
// are written (rebuild.Ensure, under the reconcile lock): lost state is
// rebuilt, a new node gets an empty file. A node with a file pays one read.
func ensureState(c *cli.Context, s session) error {
	if err := s.st.View(func(*store.Tx) error { return nil }); !errors.Is(err, store.ErrNotInitialized) {
		return err
	}
	timeout := c.Duration("timeout")
	ctx, cancel := pass.Context(c.Context, timeout)
	defer cancel()
	unlock, held, err := s.st.LockReconcile(true, timeout)
	if err == nil && !held {
		err = errors.New("held too long by another process")
	}
	if err != nil {
		return fmt.Errorf("taking the reconcile lock %s: %w", s.st.ReconcileLockPath(), err)
	}
	defer unlock()
	prefix, err := settings.VethPrefixOf(s.in)
	if err != nil {
		return asUsage(err)
	}
	_, lost, err := rebuild.Ensure(ctx, s.st, rebuild.Options{CNICacheDir: cniCacheDir(c), VethPrefix: prefix,
		NewRunner: func() (*reconcile.Runner, error) { return newRunner(ctx, s.st, s.in) }})
	if err != nil && lost.Pods > 0 {
		return fmt.Errorf("%s; rebuilding it failed: %w", lost.Message(), err)
	}
	return err
}
