// Package warm is `vpcctl pool warm`: warm-pool targets saved for this node
// (validated against the whole configuration first), a pass, and the pool
// as it is after it.
package warm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"vpc-cni/internal/usage"
	"vpc-cni/pass"
	"vpc-cni/rebuild"
	"vpc-cni/reconcile"
	"vpc-cni/settings"
	"vpc-cni/status"
	"vpc-cni/store"
)

// Target is one knob pool warm saves, and the flag that gives it.
type Target struct {
	Flag, Knob string
	Field      func(*settings.Overrides) **int
}

// Targets are the knobs pool warm saves.
var Targets = []Target{
	{"ip-target", settings.WarmIPTarget, func(o *settings.Overrides) **int { return &o.WarmIP }},
	{"min-ip-target", settings.MinIPTarget, func(o *settings.Overrides) **int { return &o.MinIP }},
	{"eni-target", settings.WarmENITarget, func(o *settings.Overrides) **int { return &o.WarmENI }},
	{"prefix-target", settings.WarmPrefixTarget, func(o *settings.Overrides) **int { return &o.WarmPrefix }},
}

// Options are what pool warm saves and how it reconciles.
type Options struct {
	Given       settings.Overrides                // the targets given; the others keep their saved value
	Reset       bool                              // drop every saved override first
	Reconcile   func() (*reconcile.Report, error) // the pass after saving; nil saves only
	Timeout     time.Duration                     // the wait for the reconcile lock when the state file is missing
	CNICacheDir string                            // for a lost state, rebuilt before anything is saved
	NewRunner   func(context.Context, *store.Store, settings.Inputs) (*reconcile.Runner, error)
}

// Result is what pool warm did.
type Result struct {
	Knobs     []settings.Value  `json:"knobs"`
	Reconcile *reconcile.Report `json:"reconcile,omitempty"`
	Pool      status.PoolStatus `json:"pool"`
}

// Run saves the overrides and reconciles. A failed pass leaves the saved overrides in force, and says so.
func Run(ctx context.Context, st *store.Store, in settings.Inputs, o Options) (Result, error) {
	if err := ensureState(ctx, st, in, o); err != nil {
		return Result{}, fmt.Errorf("pool warm: nothing saved: %w", err)
	}
	eff, err := save(st, in, o.Given, o.Reset)
	if err != nil {
		return Result{}, err
	}
	var rep *reconcile.Report
	if o.Reconcile != nil {
		if rep, err = o.Reconcile(); err != nil {
			return Result{}, fmt.Errorf("pool warm: saved %s (it stays in force; the next reconcile acts on it), "+
				"but reconciling now failed: %w", describe(o.Given, o.Reset), err)
		}
	}
	view, err := status.Load(st, in, time.Now())
	return Result{Knobs: eff.Values, Reconcile: rep, Pool: view}, err
}

// describe names what pool warm saved: "WARM_IP_TARGET=4", "the reset".
func describe(given settings.Overrides, reset bool) string {
	var parts []string
	if reset {
		parts = append(parts, "the reset of every override")
	}
	for _, t := range Targets {
		if v := *t.Field(&given); v != nil {
			parts = append(parts, fmt.Sprintf("%s=%d", t.Knob, *v))
		}
	}
	return strings.Join(parts, ", ")
}

// save validates the new overrides against the whole configuration before
// writing them, so a bad combination changes nothing.
func save(st *store.Store, in settings.Inputs, given settings.Overrides, reset bool) (settings.Effective, error) {
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
		for _, t := range Targets {
			if v := *t.Field(&given); v != nil {
				*t.Field(&merged) = v
			}
		}
		if eff, err = settings.Resolve(merged, in); err != nil {
			return usage.Wrap(err)
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
func ensureState(ctx context.Context, st *store.Store, in settings.Inputs, o Options) error {
	if err := st.View(func(*store.Tx) error { return nil }); !errors.Is(err, store.ErrNotInitialized) {
		return err
	}
	ctx, release, err := pass.Exclusive(ctx, st, o.Timeout)
	if err != nil {
		return err
	}
	defer release()
	prefix, err := settings.VethPrefixOf(in)
	if err != nil {
		return usage.Wrap(err)
	}
	_, lost, err := rebuild.Ensure(ctx, st, rebuild.Options{CNICacheDir: o.CNICacheDir, VethPrefix: prefix,
		NewRunner: func() (*reconcile.Runner, error) { return o.NewRunner(ctx, st, in) }})
	if err != nil && lost.Pods > 0 {
		return fmt.Errorf("%s; rebuilding it failed: %w", lost.Message(), err)
	}
	return err
}
