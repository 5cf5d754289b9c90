package reconcile

import (
	"bytes"
	"context"
	"encoding/json"

	"vpc-cni/pool"
	"vpc-cni/store"
)

// FirstPass is a dry run on a node without state: what the first pass would
// adopt (the node from IMDS and EC2, its attached ENIs and their addresses,
// all free) and the pass's report (the plan, the EC2 calls it would make).
type FirstPass struct {
	*Report
	Node store.Node `json:"node"`
	ENIs []FoundENI `json:"enis"`
}

// MarshalJSON is the report's JSON (its conventions, its keys) with the node
// and its ENIs added: the embedded Report's MarshalJSON would drop them.
func (fp FirstPass) MarshalJSON() ([]byte, error) {
	rep, err := json.Marshal(fp.Report)
	if err != nil {
		return nil, err
	}
	extra, err := json.Marshal(struct {
		Node store.Node `json:"node"`
		ENIs []FoundENI `json:"enis"`
	}{fp.Node, fp.ENIs})
	if err != nil {
		return nil, err
	}
	rep = bytes.TrimSuffix(bytes.TrimSpace(rep), []byte("}"))
	return append(append(rep, ','), extra[1:]...), nil
}

// FoundENI is one attached ENI the first pass would adopt.
type FoundENI struct {
	ID          string   `json:"id"`
	DeviceIndex int      `json:"deviceIndex"`
	SubnetID    string   `json:"subnetId"`
	PrimaryIP   string   `json:"primaryIp"`
	Blocks      []string `json:"blocks"` // secondary /32s and /28 prefixes, ascending
}

// PlanFirstPass plans, in memory, the first pass on a node whose store holds
// nothing yet (r.Store is store.Absent): it reads IMDS and EC2 as that pass
// would, merges their truth into an empty pool as Adopt does, and computes
// the plan. It writes nothing and makes no EC2 mutation; the caller needs
// no lock.
func (r *Runner) PlanFirstPass(ctx context.Context) (*FirstPass, error) {
	start := r.now()
	p := &pass{Runner: r, opts: Options{DryRun: true}, rep: &Report{Time: start, DryRun: true}}
	out := &FirstPass{Report: p.rep, ENIs: []FoundENI{}}
	err := p.planFirst(ctx, out)
	p.rep.Duration = r.now().Sub(start)
	return out, err
}

func (p *pass) planFirst(ctx context.Context, out *FirstPass) error {
	if err := p.prepare(ctx); err != nil { // a fresh store: nothing stored, nothing overridden
		return err
	}
	out.Node = p.node
	truth, err := p.observe(ctx) // the store knows nothing: EC2, "first read"
	if err != nil {
		return err
	}
	now := p.now()
	merged, findings := Merge(pool.Snapshot{}, truth, Evidence{}, now)
	if p.cfg.Pool.CustomNetworking {
		excludePrimary(&merged)
	}
	p.rep.Findings = append(p.rep.Findings, findings...)
	for _, e := range merged.ENIs {
		out.ENIs = append(out.ENIs, foundENI(e))
	}
	plan := pool.Compute(pool.Input{Limits: p.node.Limits, Config: p.cfg.Pool, Snapshot: merged, Now: now})
	p.rep.Plan = plan
	p.rep.Calls = append(p.rep.Calls, callsOf(plan.Actions)...)
	return nil
}

func foundENI(e pool.ENI) FoundENI {
	f := FoundENI{ID: e.ID, DeviceIndex: e.DeviceIndex, SubnetID: e.SubnetID, PrimaryIP: e.PrimaryIP.String(), Blocks: []string{}}
	for _, b := range e.Blocks {
		f.Blocks = append(f.Blocks, b.CIDR.String())
	}
	return f
}
