package reconcile

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"time"

	"vpc-cni/cloud"
	"vpc-cni/pool"
	"vpc-cni/store"
)

// mergeAndPlan merges EC2's truth into the store, plans, records the intents
// and marks releasing blocks, all in one transaction so that concurrent ADDs
// and DELs are never overwritten and a crash leaves intents to repair.
//
// When the list lacks an ENI or block a pod holds, the transaction is given
// up, EC2 is asked about those ENIs by ID (never with the store open), and
// the merge runs again with what EC2 confirmed.
func (p *pass) mergeAndPlan(ctx context.Context, truth []cloud.ENIInfo, growOnly bool) ([]step, error) {
	var ev Evidence
	var asked []string
	for {
		// IMDS-only asks EC2 nothing: what IMDS lacks and pods hold stays.
		steps, snap, err := p.mergeAndPlanOnce(truth, ev, asked == nil && !p.cfg.IMDSOnly, growOnly)
		if err != nil && !errors.Is(err, errNeedEvidence) {
			return steps, err
		}
		if err == nil {
			p.holdFindings(p.kernel.holds)
			return steps, nil
		}
		asked = heldMissing(snap, truth, ev)
		p.confirmGone(ctx, snap, asked, &ev)
	}
}

// mergeAndPlanOnce is one attempt of mergeAndPlan's transaction (a view
// for a dry run, which writes nothing).
func (p *pass) mergeAndPlanOnce(truth []cloud.ENIInfo, ev Evidence, mayAsk, growOnly bool) ([]step, pool.Snapshot, error) {
	var steps []step
	var snap pool.Snapshot
	now := p.now()
	body := func(tx *store.Tx) error {
		var err error
		if snap, err = tx.Snapshot(); err != nil {
			return err
		}
		if mayAsk && len(heldMissing(snap, truth, ev)) > 0 {
			return errNeedEvidence
		}
		merged, findings := Merge(snap, truth, ev, now, p.classRules())
		if p.cfg.Pool.CustomNetworking {
			excludePrimary(&merged)
		}
		p.rep.Findings = append(p.rep.Findings, findings...)
		waiting, err := tx.Waiting(now)
		if err != nil {
			return err
		}
		plans := p.planPools(merged, now, waiting, growOnly)
		if p.opts.DryRun {
			p.rep.Calls = append(p.rep.Calls, callsOf(p.rep.Plan.Actions)...)
			return nil
		}
		steps, err = p.writePlan(tx, snap, merged, findings, plans, now)
		return err
	}
	if p.opts.DryRun {
		return nil, snap, p.Store.View(body)
	}
	return steps, snap, p.Store.Update(body)
}

// planPools plans every pool (the default pool's and each profile's,
// pool.ComputePools) and reports them: Report.Plan holds the default pool's
// figures and every pool's actions, in the order they run; Report.Profiles
// each profile's plan.
func (p *pass) planPools(merged pool.Snapshot, now time.Time, waiting map[pool.Pool]int, growOnly bool) []pool.Plan {
	pools := pool.Pools(p.cfg.PoolConfigs(), merged, cloud.PrefixCapable(p.node.Hypervisor))
	pools[0] = p.cfg.Pool // as the pass resolved it (checkPrefixCapable)
	plans := pool.ComputePools(pool.Input{Limits: p.node.Limits, Snapshot: merged, Now: now}, pools, waiting)
	var all []pool.Action
	p.rep.Profiles, p.kernel.holds = nil, nil
	for i := range plans {
		if growOnly {
			plans[i].Actions = growActions(plans[i].Actions)
		}
		plans[i] = p.readOnlyPlan(plans[i])
		plans[i].Actions = p.guardPlan(plans[i].Actions, merged)
		all = append(all, plans[i].Actions...)
		if i > 0 {
			p.rep.Profiles = append(p.rep.Profiles, plans[i])
		}
	}
	p.rep.Plan = plans[0]
	p.rep.Plan.Actions = all
	return plans
}

// writePlan persists the merge, the effective configuration and each
// pool's timers, and records one intent per action of every pool, in the
// caller's transaction.
func (p *pass) writePlan(tx *store.Tx, snap, merged pool.Snapshot, findings []Finding, plans []pool.Plan, now time.Time) ([]step, error) {
	if err := writeMerge(tx, snap, merged, findings, now); err != nil {
		return nil, err
	}
	if err := p.recordKernelWord(tx, now); err != nil {
		return nil, err
	}
	p.unready, p.ready = unready(merged.ENIs), readyHostSides(merged.ENIs)
	if err := persistEffective(tx, p.cfg, now); err != nil {
		return nil, err
	}
	for _, plan := range plans {
		t := pool.TimersOf(merged, plan.Figures.Profile)
		t.ExcessSince = plan.ExcessSince
		if err := tx.PutPoolTimers(plan.Figures.Profile, t); err != nil {
			return nil, err
		}
	}
	p.fullSubnets = merged.FullSubnets
	if err := tx.ClearRefillClaim(); err != nil { // this plan serves every ADD so far
		return nil, err
	}
	homes, err := p.homes()
	if err != nil {
		return nil, err
	}
	return recordIntents(tx, merged, p.rep.Plan.Actions, homes, now)
}

// step is one planned action with its intent id (also the EC2 ClientToken)
// and start time (the new ENI's createdAt tag: a replay must send the very
// same parameters, or EC2 answers IdempotentParameterMismatch).
type step struct {
	pool.Action
	Intent  string
	Started time.Time
	Place   placement // CreateENI: where the new ENI goes
	// placeErr: subnet discovery found no subnet for the new ENI; the step
	// fails with it and makes no call.
	placeErr error
}

// intentOf is the intent that records the step.
func intentOf(s step) store.Intent {
	in := store.Intent{ID: s.Intent, Kind: s.Kind, ENIID: s.ENIID, DeviceIndex: s.DeviceIndex,
		Count: s.Count, Prefixes: s.Prefixes, Blocks: s.Release, Started: s.Started, Step: "planned"}
	if s.Kind == pool.CreateENI {
		in.SubnetID, in.SubnetCIDR, in.Groups = s.Place.SubnetID, s.Place.CIDR, s.Place.Groups
	}
	return in
}

// excludePrimary keeps pods off the primary ENI under custom networking: a
// primary that is not ready hands out no address (store.Take, PickAddress).
func excludePrimary(s *pool.Snapshot) {
	for i := range s.ENIs {
		if s.ENIs[i].Primary() {
			s.ENIs[i].Ready = false
		}
	}
}

func growActions(actions []pool.Action) []pool.Action {
	var out []pool.Action
	for _, a := range actions {
		if a.Kind == pool.CreateENI || a.Kind == pool.Assign {
			out = append(out, a)
		}
	}
	return out
}

// writeMerge persists only what the merge changed.
func writeMerge(tx *store.Tx, before, after pool.Snapshot, findings []Finding, now time.Time) error {
	old := map[string]pool.ENI{}
	for _, e := range before.ENIs {
		old[e.ID] = e
	}
	for _, e := range after.ENIs {
		if o, ok := old[e.ID]; !ok || !reflect.DeepEqual(o, e) {
			if err := tx.PutENI(e); err != nil {
				return err
			}
		}
		delete(old, e.ID)
	}
	for id := range old {
		if err := tx.DeleteENI(id); err != nil {
			return err
		}
	}
	for _, f := range findings {
		if err := tx.AddEvent(store.Event{Time: now, Kind: f.Kind, Message: f.Message}); err != nil {
			return err
		}
		if err := tx.AddCounter("findings_"+f.Kind, 1); err != nil {
			return err
		}
	}
	return nil
}

// recordIntents writes one intent per action and marks released blocks. New
// ENIs are placed at their pool's home (subnet discovery may move them
// before the call).
func recordIntents(tx *store.Tx, snap pool.Snapshot, actions []pool.Action, homes map[pool.Pool]placement, now time.Time) ([]step, error) {
	var steps []step
	for _, a := range actions {
		if a.Kind == pool.DeleteENI && len(a.Release) == 0 {
			a.Release = blocksOf(snap, a.ENIID)
		}
		s := step{Action: a, Intent: newToken(), Started: now}
		if a.Kind == pool.CreateENI {
			s.Place = homes[a.Profile]
		}
		in := intentOf(s)
		if err := tx.PutIntent(in); err != nil {
			return nil, err
		}
		if len(a.Release) > 0 {
			if err := tx.MarkReleasing(a.ENIID, a.Release, true); err != nil {
				return nil, fmt.Errorf("marking %v on %s releasing: %w", a.Release, a.ENIID, err)
			}
		}
		steps = append(steps, s)
	}
	return steps, nil
}

func blocksOf(snap pool.Snapshot, eniID string) []netip.Prefix {
	var out []netip.Prefix
	for _, e := range snap.ENIs {
		if e.ID == eniID {
			for _, b := range e.Blocks {
				out = append(out, b.CIDR)
			}
		}
	}
	return out
}

// callsOf lists the EC2 calls the actions make, for dry runs and reports.
func callsOf(actions []pool.Action) []string {
	var out []string
	for _, a := range actions {
		switch a.Kind {
		case pool.CreateENI:
			out = append(out, "CreateNetworkInterface", "AttachNetworkInterface", "ModifyNetworkInterfaceAttribute")
		case pool.Assign:
			out = append(out, "AssignPrivateIpAddresses")
		case pool.Unassign:
			out = append(out, "UnassignPrivateIpAddresses")
		case pool.DeleteENI:
			out = append(out, "DetachNetworkInterface", "DeleteNetworkInterface")
		}
	}
	return out
}

func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
