package reconcile

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"vpc-cni/cloud"
	"vpc-cni/pool"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// The IPv6 pool's step (ENABLE_IPv6): the primary ENI keeps one /80 that
// pods take /128s from. Every pass checks the /80 against the view it read
// (IMDS at rest, which costs no EC2 call; EC2 when IMDS disagrees, which
// includes IMDS no longer listing the /80), assigns a new one when it is
// gone, and releases extra /80s vpc-cni assigned once no pod holds an
// address in them. The warm targets do not apply: a /80 holds 2^48.

// maxOurs bounds the /80s remembered as vpc-cni's own (newest kept).
const maxOurs = 8

// IPv6Report is what the pass did about the /80 (Report.IPv6).
type IPv6Report struct {
	Prefix   netip.Prefix   `json:"prefix"`             // the /80 pods take from after the pass
	Action   string         `json:"action"`             // IPv6Kept, IPv6Assigned, IPv6Adopted, IPv6Repaired
	Previous netip.Prefix   `json:"previous,omitzero"`  // the /80 it replaced (IPv6Repaired)
	Released []netip.Prefix `json:"released,omitempty"` // extra /80s returned to EC2
}

// IPv6Report.Action values.
const (
	IPv6Kept     = "kept"
	IPv6Assigned = "assigned" // the first /80
	IPv6Adopted  = "adopted"  // one EC2 already listed on the ENI
	IPv6Repaired = "repaired" // the recorded /80 was gone; pods of it keep their /128s
)

// checkIPv6Capable refuses IPv6 pods on an instance that cannot hold a
// delegated prefix: a /80 is one (the reference's hard error).
func (p *pass) checkIPv6Capable() error {
	if !p.cfg.Pool.IPv6 || cloud.PrefixCapable(p.node.Hypervisor) {
		return nil
	}
	return ConfigError{fmt.Errorf("%s=true: %s (%s hypervisor) cannot hold the delegated /80 IPv6 pods take addresses from; "+
		"use a Nitro instance type or set %s=false", settings.EnableIPv6, p.node.InstanceType, p.node.Hypervisor, settings.EnableIPv6)}
}

// ensureIPv6 is the step, against the view the pass read (truth).
func (p *pass) ensureIPv6(ctx context.Context, truth []cloud.ENIInfo) error {
	if !p.cfg.Pool.PodIPv6() {
		return nil
	}
	i := slices.IndexFunc(truth, func(e cloud.ENIInfo) bool { return e.ID == p.node.PrimaryENI })
	if i < 0 {
		return fmt.Errorf("IPv6: the primary ENI %s is not in the view of the node's ENIs", p.node.PrimaryENI)
	}
	eni := truth[i]
	rec, plan, err := p.planIPv6(eni)
	if err != nil {
		return err
	}
	plan.Release = p.guardIPv6(eni.ID, plan.Release)
	rep := &IPv6Report{Prefix: plan.Keep, Action: ipv6Action(rec, plan), Released: plan.Release}
	p.rep.IPv6 = rep
	if p.opts.DryRun {
		p.rep.Calls = append(p.rep.Calls, ipv6Calls(plan)...)
		return nil
	}
	ours := rec.Ours
	if plan.Assign {
		if plan.Keep, err = p.assignIPv6(ctx, eni); err != nil {
			return p.forgetIPv6(rec, eni.ID, err)
		}
		rep.Prefix, ours = plan.Keep, append(ours, plan.Keep)
	}
	ours = p.releaseIPv6(ctx, eni.ID, plan.Release, ours)
	if rep.Released = plan.Release; rep.Action == IPv6Repaired {
		rep.Previous = rec.Prefix
		p.rep.Findings = append(p.rep.Findings, Finding{"ipv6-prefix-repaired", fmt.Sprintf(
			"the /80 %s is no longer on %s; pods now take addresses from %s (pods holding addresses from %s keep them until deleted)",
			rec.Prefix, eni.ID, plan.Keep, rec.Prefix)})
	}
	return p.commitIPv6(store.IPv6Pool{ENIID: eni.ID, Prefix: plan.Keep, Ours: ours}, ipv6Events(rep, eni.ID, ours)...)
}

// ipv6Events are the /80 actions of the pass as `vpcctl events` shows them
// (a kept /80 is none; a failed assign is the pass's failure event).
func ipv6Events(rep *IPv6Report, eniID string, ours []netip.Prefix) []store.Event {
	var out []store.Event
	switch rep.Action {
	case IPv6Assigned:
		out = append(out, store.Event{Kind: EventIPv6Assigned, Message: fmt.Sprintf(
			"assigned the /80 %s to %s (AssignIpv6Addresses): pods take IPv6 from it", rep.Prefix, eniID)})
	case IPv6Adopted:
		out = append(out, store.Event{Kind: EventIPv6Adopted, Message: fmt.Sprintf(
			"adopted the /80 %s EC2 already lists on %s: pods take IPv6 from it", rep.Prefix, eniID)})
	case IPv6Repaired:
		out = append(out, store.Event{Kind: EventIPv6Repaired, Message: fmt.Sprintf(
			"the /80 %s is no longer on %s; assigned %s (pods holding addresses from %s keep them until deleted)",
			rep.Previous, eniID, rep.Prefix, rep.Previous)})
	}
	var released []netip.Prefix
	for _, q := range rep.Released {
		if !slices.Contains(ours, q) { // still ours: the unassign failed
			released = append(released, q)
		}
	}
	if len(released) > 0 {
		out = append(out, store.Event{Kind: EventIPv6Released, Message: fmt.Sprintf(
			"released %s %v of %s (UnassignIpv6Addresses): no pod held an address in them",
			Plural(len(released), "extra /80", "extra /80s"), released, eniID)})
	}
	return out
}

// The events of the /80 (store.Event.Kind).
const (
	EventIPv6Assigned = "ipv6-prefix-assigned"
	EventIPv6Adopted  = "ipv6-prefix-adopted"
	EventIPv6Repaired = "ipv6-prefix-repaired"
	EventIPv6Released = "ipv6-prefix-released"
)

// planIPv6 reads the pool's record and which /80s pods use, and plans.
func (p *pass) planIPv6(eni cloud.ENIInfo) (store.IPv6Pool, pool.IPv6Plan, error) {
	var rec store.IPv6Pool
	var inUse []netip.Prefix
	err := p.Store.View(func(tx *store.Tx) (err error) {
		if rec, _, err = tx.IPv6Pool(); err != nil {
			return err
		}
		inUse, err = tx.IPv6PrefixesInUse(eni.IPv6Prefixes)
		return err
	})
	if errors.Is(err, store.ErrNotInitialized) {
		err = nil
	}
	plan := pool.PlanIPv6(rec.Prefix, rec.Ours, eni.IPv6Prefixes, inUse)
	if p.opts.GrowOnly || !p.cfg.Provisioning() {
		plan.Release = nil // an inline grow only gives; no provisioning, no calls
	}
	if plan.Assign && !p.cfg.Provisioning() {
		return rec, plan, fmt.Errorf("IPv6: the primary ENI %s has no /80 and provisioning is off (%s or %s): "+
			"assign one to it, or turn provisioning on", eni.ID, settings.DisableProvisioning, settings.IMDSOnlyMode)
	}
	return rec, plan, err
}

func ipv6Action(rec store.IPv6Pool, plan pool.IPv6Plan) string {
	switch {
	case !plan.Assign && !plan.Adopted:
		return IPv6Kept
	case rec.Prefix.IsValid():
		return IPv6Repaired
	case plan.Adopted:
		return IPv6Adopted
	}
	return IPv6Assigned
}

func ipv6Calls(plan pool.IPv6Plan) []string {
	var out []string
	if plan.Assign {
		out = append(out, "AssignIpv6Addresses")
	}
	if len(plan.Release) > 0 {
		out = append(out, "UnassignIpv6Addresses")
	}
	return out
}

// assignIPv6 asks EC2 for one /80. When the answer is lost the next pass
// reads EC2 (a /80 it finds there is adopted, not assigned again).
func (p *pass) assignIPv6(ctx context.Context, eni cloud.ENIInfo) (netip.Prefix, error) {
	pfx, err := p.Cloud.AssignIPv6Prefix(ctx, eni.ID)
	p.rep.Calls = append(p.rep.Calls, "AssignIpv6Addresses")
	if err == nil {
		return pfx, nil
	}
	if errors.Is(err, cloud.ErrSubnetNoIPv6) {
		return pfx, fmt.Errorf("IPv6 pods (%s=true) need an IPv6 CIDR on subnet %s of the primary ENI %s: %w",
			settings.EnableIPv6, eni.SubnetID, eni.ID, err)
	}
	if k := cloud.Classify(err); !k.Refused() || k == cloud.KindLimit {
		_ = p.Store.Update(func(tx *store.Tx) error { // outcome unknown: confirm it in EC2
			m, err := tx.PoolMeta()
			if err != nil {
				return err
			}
			return tx.PutEC2Sync(m.LastEC2Describe, true)
		})
	}
	return pfx, fmt.Errorf("IPv6: assigning a /80 to %s: %w", eni.ID, err)
}

// guardIPv6 leaves out of the extra /80s to release those holding an
// address the kernel routes to a running pod (guard.go), and holds it.
func (p *pass) guardIPv6(eniID string, release []netip.Prefix) []netip.Prefix {
	if len(release) == 0 {
		return nil
	}
	kept, holds := p.guardBlocks(eniID, pool.Unassign, release)
	p.holdFindings(holds)
	if len(holds) > 0 && !p.opts.DryRun {
		if err := p.Store.Update(func(tx *store.Tx) error { return p.recordHolds(tx, holds, p.now()) }); err != nil {
			p.rep.Failed = append(p.rep.Failed, fmt.Sprintf("holding the IPv6 addresses of running pods: %v", err))
		}
	}
	return kept
}

// releaseIPv6 returns extra /80s; a failure is reported and tried again by
// a later pass. It returns ours without what was released.
func (p *pass) releaseIPv6(ctx context.Context, eniID string, release, ours []netip.Prefix) []netip.Prefix {
	if len(release) == 0 {
		return ours
	}
	err := p.Cloud.UnassignIPv6(ctx, eniID, nil, release)
	p.rep.Calls = append(p.rep.Calls, "UnassignIpv6Addresses")
	if err != nil {
		p.rep.Failed = append(p.rep.Failed, fmt.Sprintf("releasing the extra /80s %v of %s: %v", release, eniID, err))
		return ours
	}
	return slices.DeleteFunc(slices.Clone(ours), func(q netip.Prefix) bool { return slices.Contains(release, q) })
}

// forgetIPv6 is a failed assign's end: a recorded /80 EC2 no longer lists
// is forgotten, so no pod gets a /128 EC2 does not route; the next pass
// assigns one again.
func (p *pass) forgetIPv6(rec store.IPv6Pool, eniID string, err error) error {
	if !rec.Prefix.IsValid() {
		return err
	}
	if cerr := p.commitIPv6(store.IPv6Pool{ENIID: eniID, Ours: rec.Ours}); cerr != nil {
		return errors.Join(err, cerr)
	}
	return err
}

// commitIPv6 records the /80 and forgets /128s whose cooldown has passed.
func (p *pass) commitIPv6(rec store.IPv6Pool, events ...store.Event) error {
	now := p.now()
	rec.UpdatedAt = now
	rec.Ours = slices.Compact(rec.Ours)
	if len(rec.Ours) > maxOurs {
		rec.Ours = rec.Ours[len(rec.Ours)-maxOurs:]
	}
	return p.Store.Update(func(tx *store.Tx) error {
		if err := tx.PutIPv6Pool(rec); err != nil {
			return err
		}
		for _, e := range events {
			e.Time = now
			if err := tx.AddEvent(e); err != nil {
				return err
			}
		}
		_, err := tx.PruneIPv6(now, p.cfg.Pool.Cooldown)
		return err
	})
}

// ipv6Agrees reports whether the IMDS view still lists the pool's /80 on
// the primary ENI (true when pods take no IPv6): otherwise the pass reads
// EC2 before it repairs anything.
func ipv6Agrees(c pool.Config, rec store.IPv6Pool, view []cloud.ENIInfo) bool {
	if !c.PodIPv6() {
		return true
	}
	if !rec.Prefix.IsValid() {
		return false
	}
	i := slices.IndexFunc(view, func(e cloud.ENIInfo) bool { return e.ID == rec.ENIID })
	return i >= 0 && slices.Contains(view[i].IPv6Prefixes, rec.Prefix)
}
