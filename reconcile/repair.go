package reconcile

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"time"

	"vpc-cni/cloud"
	"vpc-cni/pool"
	"vpc-cni/store"
)

// repairIntents finishes or undoes the EC2 mutations of a pass that died (we
// hold the lock, so every intent left is an orphan), then re-reads the truth
// if anything changed. Nothing leaks, nothing is owned twice:
//   - create: the ENI the create made carries the intent's token in a tag;
//     attached to us, the merge adopts it; found loose, it is deleted; not
//     found, the create never reached EC2 and nothing is called.
//
// A repair that EC2 refuses (denied, no credentials) is backed off (the
// intent's NextTry), so an intent that cannot be settled costs no calls on the
// passes in between; one that was throttled or met a 5xx is tried next pass,
// as such failures pass by themselves.
//   - assign: nothing to do; the merge adopts whatever EC2 assigned.
//   - unassign / delete: done again; NotFound counts as done.
func (p *pass) repairIntents(ctx context.Context, truth []cloud.ENIInfo) []cloud.ENIInfo {
	if len(p.orphans) == 0 {
		return truth
	}
	changed := false
	for _, in := range p.orphans {
		if p.now().Before(in.NextTry) {
			continue // backed off after a failed repair
		}
		in, did, err := p.repair(ctx, in, truth)
		changed = changed || did
		if errors.Is(err, errVetoed) {
			continue // dropped by keepVetoed: the next plan decides again
		}
		if err != nil {
			p.rep.Failed = append(p.rep.Failed, fmt.Sprintf("repairing %s intent %s: %v", in.Kind, in.ID, err))
			if cloud.Classify(err).Refused() {
				p.backOff(in) // denied, no credentials: asking again next pass changes nothing
			}
			continue
		}
		p.finishIntent(in)
	}
	if !changed {
		return truth
	}
	p.rep.Calls = append(p.rep.Calls, "DescribeNetworkInterfaces")
	if fresh, err := p.Cloud.InstanceENIs(ctx, p.node.InstanceID); err == nil {
		return fresh
	}
	return truth
}

// repair returns the intent as it is to be finished: a release the
// kernel vetoes (guard.go) loses the blocks it holds, which are kept.
func (p *pass) repair(ctx context.Context, in store.Intent, truth []cloud.ENIInfo) (store.Intent, bool, error) {
	switch in.Kind {
	case pool.CreateENI:
		did, err := p.repairCreate(ctx, in, truth)
		return in, did, err
	case pool.Unassign:
		return p.repairUnassign(ctx, in, truth)
	case pool.DeleteENI:
		err := p.deleteENI(ctx, in.ENIID, truth)
		if errors.Is(err, errVetoed) {
			_, holds := p.guardBlocks(in.ENIID, pool.DeleteENI, in.Blocks)
			p.keepVetoed(in, in.Blocks, holds, true)
		}
		return in, err == nil, err
	}
	return in, false, nil
}

// repairUnassign gives back what the intent still names and EC2 still
// lists, less what the kernel routes to running pods.
func (p *pass) repairUnassign(ctx context.Context, in store.Intent, truth []cloud.ENIInfo) (store.Intent, bool, error) {
	if p.kernel.err != nil {
		p.keepVetoed(in, in.Blocks, nil, true)
		return in, false, errVetoed
	}
	info, ok := findENI(truth, in.ENIID)
	still, holds := p.guardBlocks(in.ENIID, pool.Unassign, stillHeld(info, in.Blocks))
	if len(holds) > 0 {
		kept := heldBlocks(holds)
		p.keepVetoed(in, kept, holds, false)
		in.Blocks = slices.DeleteFunc(slices.Clone(in.Blocks), func(b netip.Prefix) bool { return slices.Contains(kept, b) })
	}
	if !ok || len(still) == 0 {
		return in, false, nil
	}
	p.rep.Calls = append(p.rep.Calls, "UnassignPrivateIpAddresses")
	return in, true, p.Cloud.UnassignAddresses(ctx, in.ENIID, still)
}

// keepVetoed keeps blocks a dead pass's intent would release that the
// kernel routes to running pods (or all of them, the routes unread): their
// releasing marks go, the addresses are held, and with drop the intent
// goes too, so the next plan decides again with them in use.
func (p *pass) keepVetoed(in store.Intent, blocks []netip.Prefix, holds []pool.Hold, drop bool) {
	p.holdFindings(holds)
	err := p.Store.Update(func(tx *store.Tx) error {
		if len(blocks) > 0 {
			if err := tx.MarkReleasing(in.ENIID, blocks, false); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		if drop {
			if err := tx.DeleteIntent(in.ID); err != nil {
				return err
			}
		}
		return p.recordHolds(tx, holds, p.now())
	})
	if err != nil {
		p.rep.Failed = append(p.rep.Failed, fmt.Sprintf("keeping what intent %s would release: %v", in.ID, err))
	}
}

func heldBlocks(holds []pool.Hold) []netip.Prefix {
	var out []netip.Prefix
	for _, h := range holds {
		if !slices.Contains(out, h.Block) {
			out = append(out, h.Block)
		}
	}
	return out
}

// anyAge makes LeakedENIs list loose ENIs of every age.
const anyAge = time.Duration(math.MinInt64)

// repairCreate asks EC2 whether the interrupted create happened, by the
// intent tag, instead of replaying it: a create that never reached EC2 then
// costs no mutating call (a replay would create the ENI only to delete it).
// An ENI created before the tag existed is not found here; the leaked-ENI
// sweep deletes it once it is old enough.
func (p *pass) repairCreate(ctx context.Context, in store.Intent, truth []cloud.ENIInfo) (bool, error) {
	if _, ok := byIntent(truth, in.ID); ok {
		return false, nil // attached: the merge adopts it; finishAttaches sets delete-on-termination
	}
	p.rep.Calls = append(p.rep.Calls, "DescribeNetworkInterfaces")
	loose, err := p.Cloud.LeakedENIs(ctx, p.node.VPCID, p.node.InstanceID, anyAge, p.now())
	if err != nil {
		return false, err
	}
	eni, ok := byIntent(loose, in.ID)
	if !ok {
		return false, nil // never made
	}
	return true, p.deleteWhenDetached(ctx, eni.ID)
}

func byIntent(enis []cloud.ENIInfo, token string) (cloud.ENIInfo, bool) {
	for _, e := range enis {
		if e.Tags[cloud.TagIntent] == token {
			return e, true
		}
	}
	return cloud.ENIInfo{}, false
}

// Back-off of an intent whose repair failed: doubling from intentBackoff,
// at most maxIntentBackoff.
const (
	intentBackoff    = 30 * time.Second
	maxIntentBackoff = 30 * time.Minute
)

// backOff persists the intent's next try, so every process honours it.
func (p *pass) backOff(in store.Intent) {
	in.Tries++
	wait := maxIntentBackoff
	if in.Tries <= 10 {
		wait = min(intentBackoff<<(in.Tries-1), maxIntentBackoff)
	}
	in.NextTry = p.now().Add(wait)
	if err := p.Store.Update(func(tx *store.Tx) error { return tx.PutIntent(in) }); err != nil {
		p.rep.Failed = append(p.rep.Failed, fmt.Sprintf("backing off intent %s: %v", in.ID, err))
	}
}

// finishAttaches sets delete-on-termination on attached ENIs vpc-cni created that lack
// it: a pass killed after the attach, or whose Modify call failed, left them
// so, and they would outlive the instance.
func (p *pass) finishAttaches(ctx context.Context, truth []cloud.ENIInfo) {
	for _, t := range truth {
		if !t.Attached || t.DeleteOnTermination || t.AttachmentID == "" || !createdHere(t, p.node.InstanceID) {
			continue // an ENI vpc-cni did not create is its owner's to keep or let go
		}
		p.rep.Calls = append(p.rep.Calls, "ModifyNetworkInterfaceAttribute")
		if err := p.Cloud.SetDeleteOnTermination(ctx, t.ID, t.AttachmentID); err != nil {
			p.rep.Failed = append(p.rep.Failed, fmt.Sprintf("delete-on-termination on %s: %v", t.ID, err))
		}
	}
}

func stillHeld(info cloud.ENIInfo, blocks []netip.Prefix) []netip.Prefix {
	have := map[netip.Prefix]bool{}
	for _, b := range truthBlocks(info) {
		have[b] = true
	}
	var out []netip.Prefix
	for _, b := range blocks {
		if have[b] {
			out = append(out, b)
		}
	}
	return out
}

// finishIntent drops the intent and clears releasing marks it left behind.
func (p *pass) finishIntent(in store.Intent) {
	err := p.Store.Update(func(tx *store.Tx) error {
		// The release is done in EC2: drop the blocks now, never unmark them,
		// or a pod could take an address EC2 no longer gives this node.
		switch in.Kind {
		case pool.Unassign:
			if err := tx.RemoveBlocks(in.ENIID, in.Blocks); err != nil {
				return err
			}
		case pool.DeleteENI:
			if err := tx.DeleteENI(in.ENIID); err != nil {
				return err
			}
		}
		if err := tx.AddEvent(store.Event{Time: p.now(), Kind: "repaired",
			Message: fmt.Sprintf("repaired the %s intent %s left by an interrupted pass", in.Kind, in.ID)}); err != nil {
			return err
		}
		return tx.DeleteIntent(in.ID)
	})
	if err != nil {
		p.rep.Failed = append(p.rep.Failed, fmt.Sprintf("dropping intent %s: %v", in.ID, err))
	}
}
