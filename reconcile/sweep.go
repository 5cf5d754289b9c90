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
// (or no provisioning at all) turns the sweep off. While a younger one is
// there the sweep stays due, so it goes soon after it comes of age. A
// detached ENI that lacks any of these (an adopted ENI with a user's
// description, another node's) is never deleted.
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
	p.rep.Calls = append(p.rep.Calls, "DescribeNetworkInterfaces")
	loose, err := p.Cloud.LeakedENIs(ctx, p.node.VPCID, p.node.InstanceID, anyAge, now)
	if err != nil {
		p.rep.Failed = append(p.rep.Failed, "leaked-ENI sweep: "+err.Error())
		return
	}
	leaked, young := byAge(loose, now)
	if young == 0 {
		p.lastLeakSweep = now // else the sweep stays due: the young ones are deleted once they are old enough
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

// byAge splits loose ENIs into those older than leakAge and a count of the
// younger. A young one is never a leak yet, even on a state file's first
// sweep: a pass that began before the state dir was wiped may be creating
// or attaching it (its intent is in the file that went), and its own
// reconcile.lock went with the directory.
func byAge(loose []cloud.ENIInfo, now time.Time) (old []cloud.ENIInfo, young int) {
	for _, e := range loose {
		if now.Sub(e.CreatedAt) > leakAge {
			old = append(old, e)
		} else {
			young++
		}
	}
	return old, young
}
