package reconcile

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"vpc-cni/cloud"
	"vpc-cni/pool"
)

// Evidence is what EC2 said, beyond the list, about ENIs and blocks a pod
// holds that the list lacked. Merge drops such an ENI or block only with
// evidence; without it the list alone is not enough (one incomplete or
// wrong answer would take pods' addresses) and they are kept as they are.
type Evidence struct {
	ENIs   map[string]string       // ENI ID -> how EC2 confirmed it is gone from the node
	Blocks map[netip.Prefix]string // block -> how EC2 confirmed it is gone from its ENI
}

// errNeedEvidence makes mergeAndPlan give up its transaction, ask EC2 about
// what a pod holds and the list lacked, and merge again.
var errNeedEvidence = errors.New("held ENIs or blocks missing from EC2's list")

// heldMissing lists the ENIs that hold a pod's address and that either the
// list lacks, or lack a held block in the list, and have no evidence yet.
// Pure.
func heldMissing(snap pool.Snapshot, truth []cloud.ENIInfo, ev Evidence) []string {
	listed := map[string]cloud.ENIInfo{}
	for _, t := range truth {
		if t.Attached {
			listed[t.ID] = t
		}
	}
	var out []string
	for _, e := range snap.ENIs {
		if _, done := ev.ENIs[e.ID]; done {
			continue
		}
		t, ok := listed[e.ID]
		for _, b := range e.Blocks {
			_, done := ev.Blocks[b.CIDR]
			if held(b) && !done && (!ok || !slices.Contains(truthBlocks(t), b.CIDR)) {
				out = append(out, e.ID)
				break
			}
		}
	}
	return out
}

func held(b pool.Block) bool {
	return slices.ContainsFunc(b.Addrs, func(a pool.Addr) bool { return a.State == pool.Assigned })
}

// confirmGone asks EC2 about each ENI by its ID. NotFound, or an ENI no
// longer attached to the node, confirms the ENI gone; an ENI still attached
// that lacks a block confirms that block gone. Any other answer (an error
// included) confirms nothing, and the merge keeps what it cannot confirm.
func (p *pass) confirmGone(ctx context.Context, snap pool.Snapshot, ids []string, ev *Evidence) {
	if ev.ENIs == nil {
		ev.ENIs, ev.Blocks = map[string]string{}, map[netip.Prefix]string{}
	}
	for _, id := range ids {
		p.rep.Calls = append(p.rep.Calls, "DescribeNetworkInterfaces")
		info, err := p.Cloud.ENIByID(ctx, id)
		switch {
		case err != nil && cloud.Classify(err) == cloud.KindNotFound:
			ev.ENIs[id] = "DescribeNetworkInterfaces by ID answered NotFound"
		case err != nil:
			p.log().Warn("confirming an ENI is gone", "eni", id, "err", err)
		case !info.Attached || info.InstanceID != p.node.InstanceID:
			ev.ENIs[id] = fmt.Sprintf("DescribeNetworkInterfaces by ID says it is %s, not attached to %s", info.Status, p.node.InstanceID)
		default:
			for _, b := range blocksOf(snap, id) {
				if !slices.Contains(truthBlocks(info), b) {
					ev.Blocks[b] = "DescribeNetworkInterfaces by ID says the ENI no longer holds it"
				}
			}
		}
	}
}
