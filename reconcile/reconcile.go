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

// Cloud is what a pass needs from EC2 and IMDS; *cloud.Client implements it,
// against EC2 or, in tests and what-if, the emulator. Every method is one
// capability a pass relies on: a wrapper must forward them all.
//
// Common to every method: an error is a *cloud.Error or wraps one, so
// cloud.Classify gives its Kind (throttled, unreachable, no-credentials,
// unauthorized, ...); a cancelled or expired ctx gives KindTimeout. The SDK
// retries throttling and 5xx answers within ctx, so an error from a
// mutation whose answer was lost leaves its outcome unknown: the pass keeps
// the intent and the next pass reads EC2 to learn it. Reads change nothing in
// EC2 and may be repeated. No method is called with the store open; the
// caller holds the reconcile lock for every mutation.
type Cloud interface {
	// Identity reads the node's identity from IMDS: instance ID and type,
	// zone, region, VPC and its CIDRs, subnet, primary ENI, MAC, address and
	// groups. The client caches the first success. Errors: KindUnreachable
	// (no IMDS), KindTimeout, KindOther for a value that does not parse.
	Identity(ctx context.Context) (cloud.Identity, error)
	// Instance describes one instance (DescribeInstances): its type, zone,
	// subnet and VPC, to check what IMDS said before it is stored for good.
	// KindNotFound when EC2 has no such instance in the region.
	Instance(ctx context.Context, id string) (cloud.Instance, error)
	// InstanceLimits reads the instance type's networking limits
	// (DescribeInstanceTypes). They never change, so a node asks once.
	InstanceLimits(ctx context.Context, instanceType string) (pool.Limits, cloud.InstanceTypeInfo, error)
	// InstanceENIs lists every ENI attached to the instance, in any
	// attachment state, by device index (one logical
	// DescribeNetworkInterfaces, paginated). On error the list may be
	// partial and is not to be used.
	InstanceENIs(ctx context.Context, instanceID string) ([]cloud.ENIInfo, error)
	// ENIByID describes one ENI wherever it is attached (the evidence a merge
	// needs before it drops an ENI or block a pod holds); KindNotFound when
	// EC2 has no such ENI.
	ENIByID(ctx context.Context, id string) (cloud.ENIInfo, error)
	// CreateENI creates an ENI in req.SubnetID with req.Count addresses (or
	// /28 prefixes), req.Groups and the ownership tags, in one call: all or
	// nothing. Idempotent by req.ClientToken: a replay with the same token
	// and parameters returns the same ENI; other parameters are refused
	// (IdempotentParameterMismatch). Errors: KindSubnetFull, KindNoFreePrefix,
	// KindLimit, KindUnauthorized, KindThrottled; a lost answer leaves an ENI
	// tagged with the intent's token, which repair and the leaked-ENI sweep find.
	CreateENI(ctx context.Context, req cloud.CreateENIRequest) (cloud.ENIInfo, error)
	// AttachENI attaches the ENI to the instance at deviceIndex on network
	// card 0 and returns the attachment ID. Not idempotent: attaching an
	// attached ENI, or at a taken device index, is refused (KindLimit when the
	// instance has no free slot).
	AttachENI(ctx context.Context, eniID, instanceID string, deviceIndex int) (string, error)
	// SetDeleteOnTermination makes EC2 delete the ENI with the instance
	// (ModifyNetworkInterfaceAttribute on the attachment). Idempotent.
	SetDeleteOnTermination(ctx context.Context, eniID, attachmentID string) error
	// AssignAddresses asks EC2 for count more secondary addresses (or /28
	// prefixes) on the ENI in one call, all or nothing, and returns the new
	// blocks ascending; count <= 0 makes no call. Not idempotent: each call
	// adds count more (an assign whose answer was lost is adopted by the next
	// merge). Errors: KindSubnetFull, KindNoFreePrefix, KindLimit (the ENI is
	// full), KindThrottled.
	AssignAddresses(ctx context.Context, eniID string, count int, prefixes bool) ([]netip.Prefix, error)
	// UnassignAddresses returns blocks to EC2: one call for the /32s, one for
	// the prefixes, so on an error the /32s may be gone and the prefixes not.
	// A block the ENI no longer holds makes EC2 refuse its call: callers pass
	// only blocks EC2 last showed on the ENI. A block that is not IPv4 fails
	// before any call.
	UnassignAddresses(ctx context.Context, eniID string, blocks []netip.Prefix) error
	// DetachENI detaches an ENI (force: even if the instance's OS holds it).
	// An attachment that no longer exists counts as done: idempotent. The
	// detach completes after the answer; DeleteENI may meanwhile be refused
	// with KindInUse.
	DetachENI(ctx context.Context, attachmentID string, force bool) error
	// DeleteENI deletes a detached ENI. One that no longer exists counts as
	// done: idempotent. KindInUse while a detach is still completing.
	DeleteENI(ctx context.Context, eniID string) error
	// LeakedENIs lists, sorted by ID, the ENIs this node created and lost: in
	// the VPC (and the cluster), tagged with instanceID, available, described
	// aws-K8S-, created more than olderThan before now.
	// Not a pure read: an ENI lacking a createdAt tag is tagged with now
	// (CreateTags) and left for a later sweep; an error there stops the list.
	LeakedENIs(ctx context.Context, vpcID, instanceID string, olderThan time.Duration, now time.Time) ([]cloud.ENIInfo, error)
	// ZoneSubnets lists the VPC's subnets in the zone with their tags and
	// free counts, most free first, ties by ID (subnet discovery). One call;
	// an empty list is not an error.
	ZoneSubnets(ctx context.Context, vpcID, az string) ([]cloud.Subnet, error)
	// Subnet describes one subnet by ID (its CIDR and free count);
	// KindNotFound when there is none.
	Subnet(ctx context.Context, subnetID string) (cloud.Subnet, error)

	// AttachedInterfaces lists the ENIs IMDS shows attached, with their
	// addresses and prefixes, by device index: free (per instance, not the
	// account's EC2 budget), so a pass at rest reads it instead of EC2. IMDS
	// may lag EC2; an ENI that vanishes while it is read is left out. On an
	// error the pass reads EC2 instead.
	AttachedInterfaces(ctx context.Context) ([]cloud.IMDSInterface, error)
	// VPCCIDRs reads the VPC's IPv4 CIDRs, secondary ones included, from
	// IMDS for the ENI with this MAC (one read), so a CIDR associated after
	// the node was learnt is not SNATed. On an error the learnt CIDRs stay.
	VPCCIDRs(ctx context.Context, mac string) ([]netip.Prefix, error)
	// ENIGroups reads the security group IDs of the ENI with this MAC from
	// IMDS (one read, cheap enough for every pass).
	ENIGroups(ctx context.Context, mac string) ([]string, error)
	// SetENIGroups replaces the ENI's security groups with groups (one
	// ModifyNetworkInterfaceAttribute). Idempotent: setting the groups an ENI
	// already has changes nothing.
	SetENIGroups(ctx context.Context, eniID string, groups []string) error
	// TagENI sets tags on an ENI (one CreateTags); existing keys are
	// overwritten, others kept. Idempotent. No call for no tags.
	TagENI(ctx context.Context, eniID string, tags map[string]string) error

	// AttachedInterfacesIPv6 is AttachedInterfaces with each ENI's IPv6
	// /128s, /80s and subnet /64 read too (three more IMDS reads per ENI):
	// what a pass at rest reads when pods take IPv6.
	AttachedInterfacesIPv6(ctx context.Context) ([]cloud.IMDSInterface, error)
	// AssignIPv6Prefix asks EC2 for one /80 on the ENI (AssignIpv6Addresses
	// with Ipv6PrefixCount=1) and returns it. Not idempotent: each call adds
	// one (a /80 whose answer was lost is adopted by the next pass). Errors:
	// cloud.ErrSubnetNoIPv6 (KindOther) when the subnet has no IPv6 CIDR,
	// KindNoFreePrefix, KindLimit (the ENI's IPv6 slots are used up).
	AssignIPv6Prefix(ctx context.Context, eniID string) (netip.Prefix, error)
	// UnassignIPv6 returns IPv6 /128s and /80s of the ENI in one call;
	// nothing to return is no call. One the ENI no longer holds makes EC2
	// refuse the whole call (KindOther).
	UnassignIPv6(ctx context.Context, eniID string, addrs []netip.Addr, prefixes []netip.Prefix) error
	// PrimaryIPv6 reads the first IPv6 address of the ENI with this MAC
	// from IMDS (<mac>/ipv6s, one read): the node's IPv6, which
	// ENABLE_V6_EGRESS SNATs IPv4 pods' v6if0 traffic to; a pass reads it
	// only with that knob on. A pure read, so idempotent; the zero Addr
	// and no error when the ENI has no IPv6. Errors: KindUnreachable,
	// KindTimeout, KindOther for an answer that does not parse.
	PrimaryIPv6(ctx context.Context, mac string) (netip.Addr, error)
}

var _ Cloud = (*cloud.Client)(nil)

// Host is the node side of what a pass keeps: the host networking of
// secondary ENIs and the node-level rules. KernelHost does it in the
// process's network namespace; Runner.Host nil does none (new ENIs stay not
// ready). A pass calls it with the store closed, holding the reconcile lock,
// never in a dry run.
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
	// reads it before it creates one, and refuses (Lost) when pods run. A
	// read; an error means it could not look.
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
	rebuilding    bool           // Adopt for a rebuild: the pods' wiring is what it restores
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
		p.ensureNodeRules(ctx) // the plugin's inline grows leave them to the next full pass
	}
	if !p.opts.GrowOnly && p.cfg.Provisioning() { // both change EC2
		p.followPrimaryGroups(ctx)
		p.sweepLeaked(ctx)
	}
	return cmp.Or(err, v6err)
}

// executeAndSettle makes the plan's EC2 calls and commits their outcome;
// a subnet with no free /28 (or, with subnet discovery, a full one) gets a
// grow-only round of single addresses (or in the other subnet).
func (p *pass) executeAndSettle(ctx context.Context, steps []step, truth []cloud.ENIInfo) error {
	results := p.execute(ctx, steps, truth)
	checkpoint(cpExecuted)
	err := p.settle(ctx, results, truth)
	switch {
	case noFreePrefix(err):
		err = p.growSingles(ctx)
	case p.elsewhere && cloud.IsKind(err, cloud.KindSubnetFull):
		err = p.growSingles(ctx) // a grow-only round: new ENIs go to the other subnet
	}
	return err
}

// prepare learns the node once and resolves the effective configuration
// (p.node, p.cfg); it also reads what the pass needs from the last one, in
// the same transaction.
func (p *pass) prepare(ctx context.Context) error {
	var known bool
	var stored store.Settings
	err := p.Store.View(func(tx *store.Tx) error {
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
		// A fresh node (nothing learnt, nothing overridden yet), or a file
		// removed since this process looked: either way the pass's first
		// write creates one, after lostCheck found no running pod.
		p.fresh, err = true, nil
	}
	if err != nil {
		return err
	}
	if p.cfg, err = settings.Resolve(stored.Overrides, settings.Inputs{Env: p.Env, File: p.File}); err != nil {
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

// checkPrefixCapable turns prefix delegation off, with a finding, on an
// instance that cannot hold /28 prefixes (OnNode, as the ADD's take does).
func (p *pass) checkPrefixCapable() {
	on := OnNode(p.cfg.Pool, p.node)
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
