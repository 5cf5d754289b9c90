package reconcile

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"vpc-cni/cloud"
	"vpc-cni/netns"
	"vpc-cni/pool"
	"vpc-cni/store"
)

// The kernel has the last word on releases. Before a pass gives anything
// back to EC2 (addresses or prefixes of either family, an ENI's detach and
// delete, a leaked ENI's delete), it reads the node's pod routes once: an
// address routed to a running pod's veth is held (recorded as that pod's,
// with an event) and left out, with the prefix that holds it and the ENI
// that carries it. A pass that cannot read the routes releases nothing.
// Every release path asks p.vetoed, p.guardPlan or p.guardBlocks.

// kernelWord is what the pass read of the pods' routes.
type kernelWord struct {
	routed    []pool.RoutedAddr        // addresses routed to live pods' veths, ascending
	sandboxes map[string]netns.Sandbox // whose those veths are, by name
	err       error                    // the read failed: nothing is released
	holds     []pool.Hold              // the plan's releases left out (guardPlan)
}

// FindingReleasesHeld is the finding (and event) of a pass that could not
// read the pods' routes and so released nothing; FindingReleaseHeld names
// one address a release left out because a running pod uses it.
const (
	FindingReleasesHeld = "releases-held"
	FindingReleaseHeld  = "release-held"
)

// readRoutes reads the pods' routes once, for a pass that may release
// (not an inline grow, provisioning on). A Runner without a Host sees no
// kernel, as it sets none up.
func (p *pass) readRoutes() {
	if p.Host == nil || p.opts.GrowOnly || !p.cfg.Provisioning() {
		return
	}
	hs, err := p.Host.ListPods(p.cfg.VethPrefix)
	if err != nil {
		p.kernel.err = err
		msg := fmt.Sprintf("reading the pods' routes before any release: %v; this pass releases nothing", err)
		p.rep.Findings = append(p.rep.Findings, Finding{FindingReleasesHeld, msg})
		p.log().Warn("releases held", "err", err)
		return
	}
	for _, r := range hs.LivePods() {
		p.kernel.routed = append(p.kernel.routed, pool.RoutedAddr{IP: r.IP, Veth: r.Veth})
	}
	p.kernel.sandboxes = hs.Sandboxes
}

// guardPlan is pool.Guard on one pool's plan; a failed read drops every
// release. What it left out is noted in p.kernel.holds.
func (p *pass) guardPlan(actions []pool.Action, snap pool.Snapshot) []pool.Action {
	if p.kernel.err != nil {
		return slices.DeleteFunc(actions, pool.Releases)
	}
	kept, holds := pool.Guard(actions, snap, p.kernel.routed)
	p.kernel.holds = append(p.kernel.holds, holds...)
	return kept
}

// guardBlocks is pool.GuardBlocks outside the plan (a dead pass's
// Unassign, the extra IPv6 /80s): the blocks that may go, and the holds of
// those that stay. A failed read keeps them all.
func (p *pass) guardBlocks(eniID string, kind pool.ActionKind, blocks []netip.Prefix) ([]netip.Prefix, []pool.Hold) {
	if p.kernel.err != nil {
		return nil, nil
	}
	kept, held := pool.GuardBlocks(blocks, p.kernel.routed)
	var holds []pool.Hold
	for _, h := range held {
		for _, r := range h.Routed {
			holds = append(holds, pool.Hold{IP: r.IP, Veth: r.Veth, ENIID: eniID, Block: h.Block, Kind: kind})
		}
	}
	return kept, holds
}

// vetoed says why info's ENI may not be detached or deleted ("" when it
// may): a running pod's address is on it, or the routes were not read.
func (p *pass) vetoed(info cloud.ENIInfo) string {
	if p.kernel.err != nil {
		return "the pods' routes could not be read"
	}
	blocks := truthBlocks(info)
	for _, a := range info.IPv6s {
		blocks = append(blocks, netip.PrefixFrom(a, 128))
	}
	blocks = append(blocks, info.IPv6Prefixes...)
	_, held := pool.GuardBlocks(blocks, p.kernel.routed)
	if len(held) == 0 {
		return ""
	}
	r := held[0].Routed[0]
	return fmt.Sprintf("%s on it is routed to %s, a running pod's veth", r.IP, r.Veth)
}

// holdFindings reports the holds (once the plan is final).
func (p *pass) holdFindings(holds []pool.Hold) {
	for _, h := range holds {
		p.rep.Findings = append(p.rep.Findings, Finding{FindingReleaseHeld, holdMessage(h)})
	}
}

func holdMessage(h pool.Hold) string {
	what := "unassign of " + h.Block.String()
	if h.Kind == pool.DeleteENI {
		what = "detach and delete"
	}
	return fmt.Sprintf("%s on %s is routed to %s, a running pod's veth: left out of the %s", h.IP, h.ENIID, h.Veth, what)
}

// recordKernelWord records, with the plan, what the kernel made it leave
// out: each hold, or that the routes could not be read.
func (p *pass) recordKernelWord(tx *store.Tx, now time.Time) error {
	if p.kernel.err != nil {
		return tx.AddEvent(store.Event{Time: now, Kind: FindingReleasesHeld, Message: fmt.Sprintf(
			"reading the pods' routes before any release: %v; this pass released nothing", p.kernel.err)})
	}
	return p.recordHolds(tx, p.kernel.holds, now)
}

// recordHolds keeps each held address as its pod's (HoldRouted) in the
// caller's transaction; one the store cannot hold so (already a pod's, or
// outside the pool it knows) gets the finding's event.
func (p *pass) recordHolds(tx *store.Tx, holds []pool.Hold, now time.Time) error {
	for _, h := range holds {
		in := &netns.InUseError{IP: h.IP, Veth: h.Veth, Sandbox: p.kernel.sandboxes[h.Veth]}
		err := HoldRouted(tx, in, now)
		if errors.Is(err, store.ErrAssigned) || errors.Is(err, store.ErrNotFound) {
			err = tx.AddEvent(store.Event{Time: now, Kind: FindingReleaseHeld, Message: holdMessage(h)})
		}
		if err != nil {
			return fmt.Errorf("holding %s for the pod on %s: %w", h.IP, h.Veth, err)
		}
	}
	return nil
}
