// Package reconcile is the imperative shell around the pool policy: snapshot
// the store, read EC2's truth, plan, record intents, run the EC2 calls, commit
// the results, and set up host networking for new ENIs. One pass is a short
// process; the reconcile lock makes passes take turns.
package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"vpc-cni/cloud"
	"vpc-cni/pool"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// Cloud is what a pass needs from EC2 and IMDS; *cloud.Client implements it.
type Cloud interface {
	Identity(ctx context.Context) (cloud.Identity, error)
	Instance(ctx context.Context, id string) (cloud.Instance, error)
	InstanceLimits(ctx context.Context, instanceType string) (pool.Limits, cloud.InstanceTypeInfo, error)
	InstanceENIs(ctx context.Context, instanceID string) ([]cloud.ENIInfo, error)
	// ENIByID describes one ENI wherever it is attached; KindNotFound when EC2 has no such ENI.
	ENIByID(ctx context.Context, id string) (cloud.ENIInfo, error)
	CreateENI(ctx context.Context, req cloud.CreateENIRequest) (cloud.ENIInfo, error)
	AttachENI(ctx context.Context, eniID, instanceID string, deviceIndex int) (string, error)
	SetDeleteOnTermination(ctx context.Context, eniID, attachmentID string) error
	AssignAddresses(ctx context.Context, eniID string, count int, prefixes bool) ([]netip.Prefix, error)
	UnassignAddresses(ctx context.Context, eniID string, blocks []netip.Prefix) error
	DetachENI(ctx context.Context, attachmentID string, force bool) error
	DeleteENI(ctx context.Context, eniID string) error
	LeakedENIs(ctx context.Context, vpcID string, olderThan time.Duration, now time.Time) ([]cloud.ENIInfo, error)
	// ZoneSubnets lists the VPC's subnets in the zone with their tags and
	// free counts, most free first (subnet discovery). One call.
	ZoneSubnets(ctx context.Context, vpcID, az string) ([]cloud.Subnet, error)
	// Subnet describes one subnet by ID; KindNotFound when there is none.
	Subnet(ctx context.Context, subnetID string) (cloud.Subnet, error)
}

// Host sets up and tears down the node side of secondary ENIs.
type Host interface {
	SetupENI(e pool.ENI, subnet netip.Prefix, mtu int) error
	TeardownENI(e pool.ENI, subnet netip.Prefix) error
}

// Runner runs reconcile passes.
type Runner struct {
	Store *store.Store
	Cloud Cloud
	Host  Host            // nil: no host networking (ENIs stay not ready)
	Env   settings.Lookup // the process environment
	File  *settings.File  // the configuration file (nil: none)
	Now   func() time.Time
	Log   *slog.Logger
}

// Options shape one pass.
type Options struct {
	DryRun   bool // plan and print; make no EC2 mutation and change nothing
	GrowOnly bool // inline grow from the plugin: no releases, no sweeps
}

// Report says what a pass did.
type Report struct {
	Time     time.Time          `json:"time"`
	Duration time.Duration      `json:"duration"`
	DryRun   bool               `json:"dryRun,omitempty"`
	Plan     pool.Plan          `json:"plan"`
	Calls    []string           `json:"calls"`    // EC2 calls made (or, dry-run, that would be made)
	Observed string             `json:"observed"` // where the ENIs were read: "imds", or "ec2: <why>"
	Findings []Finding          `json:"findings,omitempty"`
	Failed   []string           `json:"failed,omitempty"` // actions that did not complete, and why
	Config   settings.Effective `json:"config"`
	// Changed: knobs this pass resolved differently from the last pass.
	Changed []settings.Change `json:"changedSinceLastPass,omitempty"`

	lastLeakSweep time.Time      // carried from pass to pass, so grow-only passes keep it
	orphans       []store.Intent // intents a dead pass left (we hold the lock)
	unready       []pool.ENI     // secondary ENIs whose host side is not set up, as the pass left them

	fullSubnets map[string]time.Time    // subnets marked full, as the plan saw them
	newFull     map[string]time.Time    // subnets this pass found full
	elsewhere   bool                    // subnet discovery has room outside the full subnets
	subnetCIDRs map[string]netip.Prefix // subnets looked up for host setup
}

func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Runner) log() *slog.Logger {
	if r.Log != nil {
		return r.Log
	}
	return slog.Default()
}

// Run makes one pass. The caller holds the reconcile lock (except for dry
// runs). Every pass but a dry run leaves its outcome in the store, failed
// ones included (record.go): status, doctor, events and metrics read it.
func (r *Runner) Run(ctx context.Context, opts Options) (*Report, error) {
	start := r.now()
	rep := &Report{Time: start, DryRun: opts.DryRun}
	err := r.pass(ctx, opts, rep)
	rep.Duration = r.now().Sub(start)
	if !opts.DryRun {
		r.saveReport(rep, err)
	}
	return rep, err
}

func (r *Runner) pass(ctx context.Context, opts Options, rep *Report) error {
	node, cfg, err := r.prepare(ctx, rep)
	if err != nil {
		return err
	}
	truth, err := r.observe(ctx, node, cfg, opts, rep)
	if err != nil {
		return err // observe vets an EC2 answer before any repair or write
	}
	if !opts.DryRun {
		truth = r.repairIntents(ctx, node, truth, rep)
		r.finishAttaches(ctx, truth, rep)
	}
	steps, err := r.mergeAndPlan(ctx, node, cfg, truth, opts, rep)
	if err != nil || opts.DryRun {
		return err
	}
	if err := r.expectConfirm(steps); err != nil {
		return err
	}
	if truth, err = r.forExecute(ctx, node, steps, truth, rep); err != nil {
		return err
	}
	if err := r.place(ctx, node, cfg, steps, rep); err != nil {
		return err
	}
	checkpoint(cpPlanned)
	results := r.execute(ctx, node, steps, truth, rep)
	checkpoint(cpExecuted)
	err = r.settle(ctx, node, cfg, results, truth, rep)
	switch {
	case noFreePrefix(err):
		err = r.growSingles(ctx, node, cfg, rep)
	case rep.elsewhere && cloud.IsKind(err, cloud.KindSubnetFull):
		err = r.growSingles(ctx, node, cfg, rep) // a grow-only round: new ENIs go to the other subnet
	}
	r.setupHosts(node, cfg, rep)
	if !opts.GrowOnly {
		r.ensureNodeRules(ctx, node, rep) // the plugin's inline grows leave them to the next full pass
		r.followPrimaryGroups(ctx, node, cfg, rep)
		r.sweepLeaked(ctx, node, rep)
	}
	return err
}

// prepare learns the node once and resolves the effective configuration; it
// also reads what the pass needs from the last one, in the same transaction.
func (r *Runner) prepare(ctx context.Context, rep *Report) (store.Node, settings.Effective, error) {
	var node store.Node
	var known bool
	var stored store.Settings
	err := r.Store.View(func(tx *store.Tx) error {
		var err error
		if node, known, err = tx.Node(); err != nil {
			return err
		}
		if stored, err = tx.Settings(); err != nil {
			return err
		}
		if rep.orphans, err = tx.Intents(); err != nil {
			return err
		}
		last, _, err := tx.ReconcileReport()
		rep.lastLeakSweep = last.LastLeakSweep
		return err
	})
	if errors.Is(err, store.ErrNotInitialized) {
		err = nil // a fresh node: nothing learnt, nothing overridden yet
	}
	if err != nil {
		return node, settings.Effective{}, err
	}
	cfg, err := settings.Resolve(stored.Overrides, settings.Inputs{Env: r.Env, File: r.File})
	if err != nil {
		return node, cfg, ConfigError{err}
	}
	rep.Config = cfg
	rep.Changed = settings.Changes(stored.LastPass, cfg.Values)
	if !known {
		if node, err = r.learnNode(ctx, rep); err != nil {
			return node, cfg, err
		}
	}
	if on := OnNode(cfg.Pool, node); on.PrefixDelegation != cfg.Pool.PrefixDelegation {
		cfg.Pool = on // as the reference: warn and use single addresses
		rep.Config = cfg
		rep.Findings = append(rep.Findings, Finding{"no-prefix-delegation", fmt.Sprintf(
			"ENABLE_PREFIX_DELEGATION is ignored: %s (%s hypervisor) cannot hold /28 prefixes; using single addresses",
			node.InstanceType, node.Hypervisor)})
	}
	return node, cfg, nil
}

// ConfigError marks a bad configuration value (exit 2 in the CLI).
type ConfigError struct{ Err error }

func (c ConfigError) Error() string { return c.Err.Error() }
func (c ConfigError) Unwrap() error { return c.Err }

// IsConfigError reports whether err is a bad configuration value.
func IsConfigError(err error) bool {
	var c ConfigError
	return errors.As(err, &c)
}
