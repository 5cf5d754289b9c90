// Package reconcile is the imperative shell around the pool policy: snapshot
// the store, read EC2's truth, plan, record intents, run the EC2 calls, commit
// the results, and set up host networking for new ENIs. One pass is a short
// process; the reconcile lock makes passes take turns.
package reconcile

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"vpc-cni/cloud"
	"vpc-cni/hostnet"
	"vpc-cni/netns"
	"vpc-cni/pool"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// Host is the node side of what a pass keeps: the host networking of
// secondary ENIs and the node-level rules. KernelHost does it in the
// process's network namespace; Runner.Host nil does none (new ENIs stay not
// ready). A pass calls it with the store closed, holding the reconcile lock,
// never in a dry run but for ListPods, a read.
type Host interface {
	// SetupENI sets up the node side of a secondary ENI, its link found by
	// MAC: MTU, up, its primary IP, its route table (netns.RouteTable of the
	// device index) through subnet's gateway, and the rule that sends its
	// traffic there. Idempotent: what is in place stays, what is missing or
	// wrong is rewritten, so passes may call it to repair. An error (the
	// link has not appeared yet, a netlink call failed) may leave part of it
	// set; the ENI stays not ready and a later pass tries again.
	SetupENI(e pool.ENI, subnet netip.Prefix, mtu int) error
	// TeardownENI removes, before the ENI is detached, the rules whose
	// source is its primary IP and its routes. Idempotent: a link already
	// gone took its routes with it. The pass logs an error and detaches anyway.
	TeardownENI(e pool.ENI, subnet netip.Prefix) error
	// PrimaryLink names the link with the primary ENI's MAC, or "" when no
	// link has it: then the node-level rules are not this host's to set (a
	// test's namespace, a misconfigured run) and the pass leaves them. A read;
	// an error means it could not look.
	PrimaryLink(mac string) (string, error)
	// EnsureNodeRules checks the node-level rules (SNAT, NodePort connmark,
	// fwmark rule, rp_filter) against cfg and rewrites what is missing or
	// stale, returning what it rewrote. Idempotent and cheap when all is in
	// place (netlink reads). An error may leave some rules rewritten; the
	// next full pass checks them again. Inline grows do not call it.
	EnsureNodeRules(cfg hostnet.Config) (repaired []string, err error)
	// ListPods reads the pods' wiring (host veths named with vethPrefix,
	// their routes, which namespaces live): a pass on a fresh state file
	// reads it before it creates one, and refuses (Lost) when pods run; a
	// pass that may release reads it once first (guard.go). A read; an
	// error means it could not look.
	ListPods(vethPrefix string) (netns.HostState, error)
}

var _ Host = KernelHost{}

// Runner runs reconcile passes.
type Runner struct {
	Store *store.Store
	Cloud Cloud
	Host  Host            // nil: no host networking (ENIs stay not ready)
	Env   settings.Lookup // the process environment
	File  *settings.File  // the configuration file (nil: none)
	Names func() []string // the environment's variable names (settings.Inputs.Names; nil: none)
	Now   func() time.Time
	Log   *slog.Logger
}

// Options shape one pass.
type Options struct {
	DryRun   bool // plan and print; make no EC2 mutation and change nothing
	GrowOnly bool // inline grow from the plugin: no releases, no sweeps
	// LinkWait: a new ENI whose link has not appeared yet (the driver and
	// udev lag the attach) is waited for until then, not left to a later
	// pass: the plugin's inline grow sets it to its ADD's deadline.
	LinkWait time.Time
}

// Report says what a pass did.
type Report struct {
	Time     time.Time     `json:"time"`
	Duration time.Duration `json:"duration"`
	DryRun   bool          `json:"dryRun,omitempty"`
	Plan     pool.Plan     `json:"plan"` // the default pool's figures; every pool's actions
	// Profiles: each network profile pool's plan (its actions are in
	// Plan's too), in the order of the configuration's profiles.
	Profiles []pool.Plan        `json:"profiles,omitempty"`
	Calls    []string           `json:"calls"`    // EC2 calls made (or, dry-run, that would be made)
	Observed string             `json:"observed"` // where the ENIs were read: "imds", or "ec2: <why>"
	Findings []Finding          `json:"findings,omitempty"`
	Failed   []string           `json:"failed,omitempty"` // actions that did not complete, and why
	Config   settings.Effective `json:"config"`
	// Changed: knobs this pass resolved differently from the last pass.
	Changed []settings.Change `json:"changedSinceLastPass,omitempty"`
	// IPv6: what the pass did about the primary ENI's /80 (ENABLE_IPv6).
	IPv6 *IPv6Report `json:"ipv6,omitempty"`
}

// pass is one pass's working value: what every step reads (the node, the
// effective configuration, the options), the report it fills, and what one
// step hands on to a later one. It lives for one Run or Adopt; the Report
// keeps only what a pass reports.
type pass struct {
	*Runner
	opts Options
	node store.Node         // learnt once, read at the start of the pass
	cfg  settings.Effective // resolved at the start of the pass
	rep  *Report

	fresh         bool           // no state file yet: the pass's first write creates it (lost.go)
	kept          *SetAside      // another instance's state file this pass set aside (identity.go)
	rebuilding    bool           // Adopt for a rebuild: the pods' wiring is what it restores
	lastLeakSweep time.Time      // carried from pass to pass, so grow-only passes keep it
	orphans       []store.Intent // intents a dead pass left (we hold the lock)
	unready       []pool.ENI     // secondary ENIs whose host side is not set up, as the pass left them
	ready         []pool.ENI     // secondary ENIs whose host side was set up: a full pass checks it again

	deleting map[string]bool // ENIs this pass tore down to detach or delete: their host side is not set up again

	fullSubnets map[string]time.Time    // subnets marked full, as the plan saw them
	newFull     map[string]time.Time    // subnets this pass found full
	elsewhere   bool                    // subnet discovery has room outside the full subnets
	profileRoom map[pool.Pool]bool      // profiles refused in a full subnet with room in another of theirs
	zone        zoneRead                // the zone's subnets as settle read them (zoneSubnets)
	subnetCIDRs map[string]netip.Prefix // subnets looked up for host setup

	resync    bool                   // the pass reads EC2 as its safety net (or first read): tag changes are looked for
	groupSets map[pool.Pool]groupSet // profiles' groups given by tag, as resolved in this pass (profilegroups.go)
	imdsPools map[string]imdsProfile // IMDS-only: the pools of ENIs new to the store, by their groups (imdsprofiles.go)
	kernel    kernelWord             // the pods' routes, read once before any release (guard.go)
}

// inputs are the layers under the store's overrides.
func (r *Runner) inputs() settings.Inputs {
	return settings.Inputs{Env: r.Env, File: r.File, Names: r.Names}
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
	p := &pass{Runner: r, opts: opts, rep: &Report{Time: start, DryRun: opts.DryRun}}
	err := p.run(ctx)
	p.rep.Duration = r.now().Sub(start)
	if !opts.DryRun {
		p.saveReport(err)
	}
	return p.rep, err
}

func (p *pass) run(ctx context.Context) error {
	if err := p.prepare(ctx); err != nil {
		return err
	}
	truth, err := p.observe(ctx)
	if err != nil {
		return err // observe vets an EC2 answer before any repair or write
	}
	p.resolveForDrift(ctx, truth)
	// Before the first release (the intents' repair):
	p.readRoutes()
	if !p.opts.DryRun && p.cfg.Provisioning() { // repairs mutate; with provisioning off intents wait
		truth = p.repairIntents(ctx, truth)
		p.finishAttaches(ctx, truth)
		p.addENITags(ctx, truth)
	}
	steps, err := p.mergeAndPlan(ctx, truth, p.opts.GrowOnly)
	if err != nil {
		return err
	}
	v6err := p.ensureIPv6(ctx, truth) // IPv4 steps go ahead either way
	if p.opts.DryRun {
		return v6err
	}
	if err := p.expectConfirm(steps); err != nil {
		return err
	}
	if truth, err = p.forExecute(ctx, steps, truth); err != nil {
		return err
	}
	if err := p.place(ctx, steps); err != nil {
		return err
	}
	checkpoint(cpPlanned)
	err = p.executeAndSettle(ctx, steps, truth)
	p.setupHosts()
	if !p.opts.GrowOnly {
		p.repairHosts() // the plugin's inline grows leave them to the next full pass
	}
	var rulesErr error
	if !p.opts.GrowOnly || p.keepSourceGrew() {
		rulesErr = p.ensureNodeRules(ctx) // the plugin's inline grows leave them to the next full pass
	}
	if !p.opts.GrowOnly && p.cfg.Provisioning() { // both change EC2
		p.followPrimaryGroups(ctx)
		p.sweepLeaked(ctx)
	}
	return cmp.Or(err, v6err, rulesErr)
}

// executeAndSettle makes the plan's EC2 calls and commits their outcome;
// a subnet with no free /28 (or a full one, when subnet discovery or the
// refused profile has another with room) gets a grow-only round of single
// addresses (or in the other subnet).
func (p *pass) executeAndSettle(ctx context.Context, steps []step, truth []cloud.ENIInfo) error {
	results := p.execute(ctx, steps, truth)
	checkpoint(cpExecuted)
	err := p.settle(ctx, results, truth)
	switch {
	case noFreePrefix(err):
		err = p.growSingles(ctx)
	case (p.elsewhere || len(p.profileRoom) > 0) && cloud.IsKind(err, cloud.KindSubnetFull):
		err = p.growSingles(ctx) // a grow-only round: new ENIs go to the other subnet
	}
	return err
}

// prepare checks the stored node against IMDS (identity.go), learns a new
// one, and resolves the effective configuration
// (p.node, p.cfg); it also reads what the pass needs from the last one, in
// the same transaction.
func (p *pass) prepare(ctx context.Context) error {
	known, stored, err := p.readLast()
	if err != nil {
		return err
	}
	if known { // every pass: the file must be this instance's
		if err := p.confirmSelf(ctx); err != nil {
			return err
		}
		if p.kept != nil {
			known, stored = false, store.Settings{}
		}
	}
	if p.cfg, err = settings.Resolve(stored.Overrides, p.inputs()); err != nil {
		return ConfigError{err}
	}
	if !known && !p.opts.DryRun { // no node yet: nothing a running pod holds is recorded
		if err := p.lostCheck(); err != nil {
			return err
		}
	}
	p.rep.Config = p.cfg
	p.rep.Changed = settings.Changes(stored.LastPass, p.cfg.Values)
	p.gate()
	if !known {
		if p.node, err = p.learnNode(ctx); err != nil {
			return err
		}
	}
	p.checkPrefixCapable()
	return p.checkIPv6Capable()
}

// readLast reads the stored node, settings, intents and last report in one
// transaction. A missing file is a fresh node (nothing learnt, nothing
// overridden yet), or a file removed since this process looked: either way
// the pass's first write creates one, after lostCheck found no running pod.
func (p *pass) readLast() (known bool, stored store.Settings, err error) {
	err = p.Store.View(func(tx *store.Tx) error {
		var err error
		if p.node, known, err = tx.Node(); err != nil {
			return err
		}
		if stored, err = tx.Settings(); err != nil {
			return err
		}
		if p.orphans, err = tx.Intents(); err != nil {
			return err
		}
		last, _, err := tx.ReconcileReport()
		p.lastLeakSweep = last.LastLeakSweep
		return err
	})
	if errors.Is(err, store.ErrNotInitialized) {
		p.fresh, err = true, nil
	}
	return known, stored, err
}

// checkPrefixCapable learns whether the instance can hold /28 prefixes (a
// node fact the ADD's take reads; a store from before it lacks it) and
// turns prefix delegation off, with a finding, where it cannot.
func (p *pass) checkPrefixCapable() {
	if can := cloud.PrefixCapable(p.node.Hypervisor); can != p.node.PrefixCapable && !p.opts.DryRun {
		p.node.PrefixCapable = can
		if err := p.updateNode(func(n *store.Node) { n.PrefixCapable = can }); err != nil {
			p.rep.Failed = append(p.rep.Failed, "storing whether the instance holds prefixes: "+err.Error())
		}
	}
	on := pool.OnNode(p.cfg.Pool, cloud.PrefixCapable(p.node.Hypervisor))
	if on.PrefixDelegation == p.cfg.Pool.PrefixDelegation {
		return
	}
	p.cfg.Pool = on // as the reference: warn and use single addresses
	p.rep.Config = p.cfg
	p.rep.Findings = append(p.rep.Findings, Finding{"no-prefix-delegation", fmt.Sprintf(
		"ENABLE_PREFIX_DELEGATION is ignored: %s (%s hypervisor) cannot hold /28 prefixes; using single addresses",
		p.node.InstanceType, p.node.Hypervisor)})
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
