package reconcile

import (
	"fmt"
	"net/netip"
	"slices"
	"time"

	"vpc-cni/cloud"
	"vpc-cni/pool"
)

// Finding is something the merge noticed that an operator should know.
type Finding struct {
	Kind    string `json:"kind"` // "adopted-eni", "adopted-block", "dropped-eni", "dropped-block", "lost-assignment", "kept-eni", "kept-block"
	Message string `json:"message"`
}

// Merge makes the store's pool agree with EC2, which is the truth for
// addresses: blocks EC2 has and the store lacks are adopted as free; blocks
// the store has and EC2 lacks are dropped (an assigned address among them is
// reported as lost). An ENI or block a pod holds is dropped only with
// evidence that EC2 confirmed it gone (absence.go), and kept as it is
// otherwise. Address states the store knows are kept. Every ENI is
// classified under r (classify.go); of a not-ours ENI only the blocks pods
// still hold are kept, and nothing is adopted. Pure.
func Merge(snap pool.Snapshot, truth []cloud.ENIInfo, ev Evidence, now time.Time, r ClassRules) (pool.Snapshot, []Finding) {
	var out pool.Snapshot = snap
	out.ENIs = nil
	var found []Finding
	known := map[string]pool.ENI{}
	for _, e := range snap.ENIs {
		known[e.ID] = e
	}
	for _, t := range truth {
		if !t.Attached {
			continue
		}
		old, had := known[t.ID]
		delete(known, t.ID)
		if !had {
			old = pool.ENI{ID: t.ID, CreatedAt: now}
		}
		eni, f := mergeENI(old, t, ev, now, r, !had)
		if !had && !eni.NotOurs() {
			found = append(found, Finding{"adopted-eni", fmt.Sprintf("adopted ENI %s (device %d) found attached in EC2 (%s)",
				t.ID, t.DeviceIndex, cmpOr(eni.Class, "unclassified"))})
		}
		found = append(found, f...)
		out.ENIs = append(out.ENIs, eni)
	}
	for _, gone := range sortedENIs(known) {
		evidence, confirmed := ev.ENIs[gone.ID]
		switch {
		case heldENI(gone) && !confirmed:
			found = append(found, Finding{"kept-eni", fmt.Sprintf("ENI %s holds pods' addresses but is missing from "+
				"EC2's list of the node's ENIs, and EC2 did not confirm it gone; kept until it does", gone.ID)})
			out.ENIs = append(out.ENIs, gone)
			continue
		case !confirmed:
			evidence = "EC2's list of the node's ENIs lacks it, and no pod holds an address on it"
		}
		found = append(found, Finding{"dropped-eni", fmt.Sprintf("ENI %s is no longer attached in EC2 (%s); dropped", gone.ID, evidence)})
		found = append(found, lostAssignments(gone.Blocks)...)
	}
	slices.SortFunc(out.ENIs, byCardDevice)
	return out, found
}

// byCardDevice orders ENIs card 0 first, then by device index (which is
// per card).
func byCardDevice(a, b pool.ENI) int {
	if a.Card != b.Card {
		return a.Card - b.Card
	}
	return a.DeviceIndex - b.DeviceIndex
}

func mergeENI(old pool.ENI, t cloud.ENIInfo, ev Evidence, now time.Time, r ClassRules, isNew bool) (pool.ENI, []Finding) {
	e := old
	e.DeviceIndex, e.MAC, e.PrimaryIP, e.SubnetID, e.Card = t.DeviceIndex, t.MAC, t.PrimaryIP, t.SubnetID, t.NetworkCard
	if e.Primary() {
		e.Ready = true // the primary ENI's host side is the node's own
	}
	found := classify(&e, old, t, r, isNew)
	want := truthBlocks(t)
	have := map[netip.Prefix]pool.Block{}
	for _, b := range old.Blocks {
		if !e.NotOurs() || held(b) {
			have[b.CIDR] = b // a not-ours ENI's free blocks leave the pool quietly
		}
	}
	if e.NotOurs() {
		want = notOursBlocks(old, want)
	}
	e.Blocks = nil
	for _, cidr := range want {
		if b, ok := have[cidr]; ok {
			e.Blocks = append(e.Blocks, b)
			delete(have, cidr)
			continue
		}
		found = append(found, Finding{"adopted-block", fmt.Sprintf("adopted %s on %s from EC2 as free", cidr, t.ID)})
		e.Blocks = append(e.Blocks, NewBlock(cidr, now))
	}
	for _, b := range sortedBlocks(have) {
		evidence, confirmed := ev.Blocks[b.CIDR]
		switch {
		case held(b) && !confirmed:
			found = append(found, Finding{"kept-block", fmt.Sprintf("%s on %s is held by a pod but missing from EC2's list, "+
				"and EC2 did not confirm it gone; kept until it does", b.CIDR, t.ID)})
			e.Blocks = append(e.Blocks, b)
			continue
		case !confirmed:
			evidence = "EC2's list lacks it, and no pod holds it"
		}
		found = append(found, Finding{"dropped-block", fmt.Sprintf("%s on %s is gone from EC2 (%s); dropped", b.CIDR, t.ID, evidence)})
		found = append(found, lostAssignments([]pool.Block{b})...)
	}
	slices.SortFunc(e.Blocks, func(a, b pool.Block) int { return a.CIDR.Addr().Compare(b.CIDR.Addr()) })
	return e, found
}

// truthBlocks lists the ENI's pod-usable blocks as EC2 reports them.
func truthBlocks(t cloud.ENIInfo) []netip.Prefix {
	var out []netip.Prefix
	for _, ip := range t.Secondary {
		if ip != t.PrimaryIP {
			out = append(out, netip.PrefixFrom(ip, 32))
		}
	}
	return append(out, t.Prefixes...)
}

// NewBlock is a block whose every address is free since now.
func NewBlock(cidr netip.Prefix, now time.Time) pool.Block {
	b := pool.Block{CIDR: cidr.Masked()}
	for ip := b.CIDR.Addr(); b.CIDR.Contains(ip); ip = ip.Next() {
		b.Addrs = append(b.Addrs, pool.Addr{IP: ip, State: pool.Free, Since: now})
	}
	return b
}

func heldENI(e pool.ENI) bool { return slices.ContainsFunc(e.Blocks, held) }

func lostAssignments(blocks []pool.Block) []Finding {
	var out []Finding
	for _, b := range blocks {
		for _, a := range b.Addrs {
			if a.State == pool.Assigned {
				out = append(out, Finding{"lost-assignment",
					fmt.Sprintf("address %s of %s is gone from EC2 while assigned; the pod must be recreated", a.IP, a.Owner)})
			}
		}
	}
	return out
}

func sortedENIs(m map[string]pool.ENI) []pool.ENI {
	out := make([]pool.ENI, 0, len(m))
	for _, e := range m {
		out = append(out, e)
	}
	slices.SortFunc(out, byCardDevice)
	return out
}

func sortedBlocks(m map[netip.Prefix]pool.Block) []pool.Block {
	out := make([]pool.Block, 0, len(m))
	for _, b := range m {
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b pool.Block) int { return a.CIDR.Addr().Compare(b.CIDR.Addr()) })
	return out
}
