package reconcile

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"vpc-cni/cloud"
	"vpc-cni/pool"
	"vpc-cni/store"
)

// subnetBackoff is how long growth pauses after the subnet ran out of
// addresses (the reference's 120 s). No free /28 starts the prefix fallback
// instead (fallback.go).
const subnetBackoff = 2 * time.Minute

// commit records what the EC2 calls achieved, in one transaction against the
// store as it is now (pods may have come and gone meanwhile).
func (p *pass) commit(results []result) error {
	now := p.now()
	var firstErr error
	err := p.Store.Update(func(tx *store.Tx) error {
		for _, res := range results {
			if err := applyResult(tx, res, now, p.classRules()); err != nil {
				return err
			}
			if res.Err != nil && firstErr == nil && !errors.Is(res.Err, errSkipped) {
				firstErr = res.Err
			}
		}
		if err := settleConfirm(tx, results); err != nil {
			return err
		}
		return p.noteBackoff(tx, results, now)
	})
	if err != nil {
		return fmt.Errorf("recording the results: %w", err)
	}
	p.noteUnready(results, now)
	return firstErr
}

// noteUnready keeps the pass's list of ENIs to set up current: new ENIs join
// it, deleted ones leave it. (setupHosts then needs no second read of the
// whole pool.)
func (p *pass) noteUnready(results []result, now time.Time) {
	for _, res := range results {
		switch {
		case !res.Done:
		case res.Kind == pool.CreateENI:
			p.unready = append(p.unready, unready([]pool.ENI{createdENI(res, now, p.classRules())})...)
		case res.Kind == pool.DeleteENI:
			p.unready = slices.DeleteFunc(p.unready, func(e pool.ENI) bool { return e.ID == res.ENIID })
		}
	}
}

func applyResult(tx *store.Tx, res result, now time.Time, r ClassRules) error {
	if err := countCall(tx, res, now); err != nil {
		return err
	}
	if !res.Done && !settled(res) {
		return nil // keep the intent (and releasing marks): the next pass repairs it
	}
	if err := tx.DeleteIntent(res.Intent); err != nil {
		return err
	}
	if !res.Done {
		if len(res.Release) > 0 {
			return tx.MarkReleasing(res.ENIID, res.Release, false)
		}
		return nil
	}
	switch res.Kind {
	case pool.CreateENI:
		return tx.PutENI(createdENI(res, now, r))
	case pool.Assign:
		var blocks []pool.Block
		for _, cidr := range res.Blocks {
			blocks = append(blocks, NewBlock(cidr, now))
		}
		return tx.AddBlocks(res.ENIID, blocks)
	case pool.Unassign:
		return tx.RemoveBlocks(res.ENIID, res.Release)
	case pool.DeleteENI:
		return tx.DeleteENI(res.ENIID)
	}
	return nil
}

// settled reports whether a failed step certainly changed nothing in EC2 (it
// was never sent, or EC2 refused it), so its intent can go. A throttled
// create goes too: EC2 made no ENI, and repairing it would replay the create
// (making an ENI) only to delete it, three calls in the bucket that throttled
// a cluster's scale-up (docs/targets.md, cluster scale); should an earlier attempt
// behind the SDK's retries have made one, it is tagged and unattached, and
// the leaked-ENI sweep deletes it.
func settled(res result) bool {
	if errors.Is(res.Err, errSkipped) || errors.Is(res.Err, errVetoed) || res.Kind == pool.Assign || res.placeErr != nil {
		return true // an assign that did happen is adopted by the next merge; a step not placed or vetoed was never sent
	}
	k := cloud.Classify(res.Err)
	return k.Refused() || k == cloud.KindThrottled && res.Kind == pool.CreateENI
}

func countCall(tx *store.Tx, res result, now time.Time) error {
	outcome := "ok"
	if res.Err != nil {
		outcome = "failed"
	}
	if err := tx.AddCounter(fmt.Sprintf("actions_%s_%s", res.Kind, outcome), 1); err != nil {
		return err
	}
	return tx.AddEvent(store.Event{Time: now, Kind: string(res.Kind), Message: actionEvent(res)})
}

// noteBackoff persists the subnet-exhaustion back-off so every process
// honours it. A subnet with addresses but no free /28 only switches growth
// to single IPs for a while (the prefix fallback); growth goes on. A full
// subnet is marked so; when subnet discovery has another subnet with room
// (rep.elsewhere), growth goes on there, else the whole node backs off.
func (p *pass) noteBackoff(tx *store.Tx, results []result, now time.Time) error {
	if len(p.newFull) > 0 {
		if err := tx.PutFullSubnets(p.newFull, now); err != nil {
			return err
		}
	}
	for _, res := range results {
		if isGroupsError(res.Err) { // only a profile's groups are resolved by tag
			if err := p.groupsBackoff(tx, res, now); err != nil {
				return err
			}
			continue
		}
		if res.Profile != "" && res.Err != nil && cloud.Classify(res.Err) == cloud.KindSubnetFull {
			if err := p.profileBackoff(tx, res, now); err != nil {
				return err
			}
			continue
		}
		if isGrowth(res.Kind) && res.Prefixes && noFreePrefix(res.Err) {
			return noteNoPrefixes(tx, now)
		}
		if res.Err != nil && cloud.Classify(res.Err) == cloud.KindSubnetFull && p.elsewhere {
			return tx.AddEvent(store.Event{Time: now, Kind: "subnet-full", Message: fmt.Sprintf(
				"%v; new ENIs go to another subnet of the zone (subnet discovery)", res.Err)})
		}
		if res.Err != nil && cloud.Classify(res.Err) == cloud.KindSubnetFull {
			snap, err := tx.Snapshot()
			if err != nil {
				return err
			}
			why := "subnet exhausted: " + res.Err.Error()
			return tx.PutPoolTimers(pool.DefaultPool, pool.Timers{ExcessSince: snap.ExcessSince, GrowBlockedUntil: now.Add(subnetBackoff), GrowBlockedWhy: why})
		}
	}
	return nil
}

// createdENI is the store's view of the ENI a create step made, in its
// step's pool.
func createdENI(res result, now time.Time, r ClassRules) pool.ENI {
	e := eniFrom(*res.Created, res.Place.CIDR, now, r)
	e.Profile = res.Place.Profile
	if r.checksGroups(e.Profile) {
		e.Groups = sortedCopy(res.Created.SecurityGroups) // what the at-rest check compares IMDS with
	}
	return e
}

// eniFrom is the store's view of a freshly attached ENI: not ready until its
// host side is set up. This node created it: ours, from EC2's answer.
func eniFrom(t cloud.ENIInfo, subnet netip.Prefix, now time.Time, r ClassRules) pool.ENI {
	e := pool.ENI{ID: t.ID, DeviceIndex: t.DeviceIndex, MAC: t.MAC, PrimaryIP: t.PrimaryIP,
		SubnetID: t.SubnetID, SubnetCIDR: subnet, CreatedAt: now, Ready: t.DeviceIndex == 0}
	if t.Described {
		e.Facts = factsOf(t, r.InstanceID)
		e.Class, e.Why = pool.Classify(e.Facts, e.Card, e.DeviceIndex, r.ManageUntagged)
	}
	for _, cidr := range truthBlocks(t) {
		e.Blocks = append(e.Blocks, NewBlock(cidr, now))
	}
	return e
}

// settle commits the results after noting which subnets ran out of
// addresses and whether subnet discovery, or a refused profile's subnets,
// have room elsewhere.
func (p *pass) settle(ctx context.Context, results []result, truth []cloud.ENIInfo) error {
	p.newFull = markFull(results, truth, p.now().Add(subnetBackoff))
	p.zone.read = false
	p.elsewhere = p.roomElsewhere(ctx, p.newFull)
	p.profileRoom = p.profilesWithRoom(ctx, results, p.newFull)
	return p.commit(results)
}
