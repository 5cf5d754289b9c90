package reconcile

import (
	"context"
	"fmt"
	"time"

	"vpc-cni/cloud"
)

// Leaked ENIs (this node's instance tag, vpc-cni's description prefix,
// available, a createdAt older than leakAge) are deleted, at most leakBatch
// per pass and at most once per LeakSweepEvery; DISABLE_LEAKED_ENI_CLEANUP
// (or no provisioning at all) turns the sweep off. A detached ENI that
// lacks any of these (an adopted ENI with a user's description, another
// node's) is never deleted.
const (
	leakAge   = 5 * time.Minute
	leakBatch = 5
)

// LeakSweepEvery is how often a node looks for leaked ENIs (one
// DescribeNetworkInterfaces). Hourly, 5,000 nodes spent 1.4 calls a second
// of the account's 20 on it, as much as a quarter of the IMDS steady state's
// safety net (vpcctl sim whatif --cluster, docs/targets.md); leaks are rare (intents
// repair a pass killed mid-call), so six hours is soon enough.
const LeakSweepEvery = 6 * time.Hour

func (p *pass) sweepLeaked(ctx context.Context) {
	now := p.now()
	if !p.cfg.LeakSweep() || now.Sub(p.lastLeakSweep) < LeakSweepEvery {
		return
	}
	age := leakAge
	if p.lastLeakSweep.IsZero() {
		age = orphanAge(p.rep.Time, now)
	}
	p.lastLeakSweep = now
	p.rep.Calls = append(p.rep.Calls, "DescribeNetworkInterfaces")
	leaked, err := p.Cloud.LeakedENIs(ctx, p.node.VPCID, p.node.InstanceID, age, now)
	if err != nil {
		p.rep.Failed = append(p.rep.Failed, "leaked-ENI sweep: "+err.Error())
		return
	}
	for i, e := range leaked {
		if i == leakBatch {
			break
		}
		if why := p.vetoed(e); why != "" {
			p.rep.Findings = append(p.rep.Findings, Finding{"leaked-eni-kept", fmt.Sprintf(
				"not deleting the leaked ENI %s: %s", e.ID, why)})
			continue
		}
		p.rep.Calls = append(p.rep.Calls, "DeleteNetworkInterface")
		if err := p.Cloud.DeleteENI(ctx, e.ID); err != nil {
			p.rep.Failed = append(p.rep.Failed, fmt.Sprintf("deleting leaked ENI %s: %v", e.ID, err))
			continue
		}
		p.rep.Findings = append(p.rep.Findings, Finding{"leaked-eni", fmt.Sprintf("deleted leaked ENI %s (tagged for %s)",
			e.ID, e.Tags[cloud.TagInstanceID])})
	}
}

// orphanAge is the age a leaked ENI needs in a state file's first sweep
// (a new node, or state lost and rebuilt): created before this pass began.
// The intents of a lost file are gone, so nothing else would ever attach
// or delete such an ENI, and no pass of this node is creating one now: we
// hold the reconcile lock, under which every create runs. An ENI this pass
// created itself is younger and left alone.
func orphanAge(passStart, now time.Time) time.Duration {
	return max(now.Sub(passStart), 0)
}
