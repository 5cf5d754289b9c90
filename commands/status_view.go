package commands

import (
	"encoding/json"
	"fmt"
	"time"

	"vpc-cni/pool"
	"vpc-cni/reconcile"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// duration prints as "30s" in JSON and YAML, not as nanoseconds.
type duration time.Duration

func (d duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads what MarshalJSON writes, so scripts (and tests) can
// decode the status with the same types.
func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	*d = duration(v)
	return err
}

// NodeStatus is the node's identity with its limits in camelCase (the
// stored record's limits are the policy's type, which has no JSON names).
type NodeStatus struct {
	store.Node
	Limits LimitsStatus `json:"limits"` // shadows Node.Limits
}

// LimitsStatus are the instance type's networking limits.
type LimitsStatus struct {
	MaxENIs    int `json:"maxEnis"`
	IPv4PerENI int `json:"ipv4PerEni"`
}

func nodeStatus(n store.Node) *NodeStatus {
	return &NodeStatus{Node: n, Limits: LimitsStatus{MaxENIs: n.Limits.MaxENIs, IPv4PerENI: n.Limits.IPv4PerENI}}
}

// KnobStatus is one knob as this invocation resolves it and as the last
// reconcile pass used it (absent before the first pass).
type KnobStatus struct {
	settings.Value
	LastPass *settings.Value `json:"lastPass,omitempty"`
	Differs  bool            `json:"differsFromLastPass"`
}

func knobStatus(now, last []settings.Value) []KnobStatus {
	prev := map[string]settings.Value{}
	for _, v := range last {
		prev[v.Name] = v
	}
	out := make([]KnobStatus, 0, len(now))
	for _, v := range now {
		k := KnobStatus{Value: v}
		if p, ok := prev[v.Name]; ok {
			k.LastPass, k.Differs = &p, p.Value != v.Value
		}
		out = append(out, k)
	}
	return out
}

// ExcessStatus is excess waiting for RELEASE_DELAY: the first reconcile at or
// after ReleaseAt returns it to EC2 if it is still excess then.
type ExcessStatus struct {
	Addresses int       `json:"addresses"`
	Since     time.Time `json:"since"`
	ReleaseAt time.Time `json:"releaseAt"`
	Delay     duration  `json:"releaseDelay"`
}

func excessStatus(plan pool.Plan, delay time.Duration) *ExcessStatus {
	if plan.Figures.Excess == 0 || plan.ExcessSince.IsZero() {
		return nil
	}
	return &ExcessStatus{Addresses: plan.Figures.Excess, Since: plan.ExcessSince,
		ReleaseAt: plan.ExcessSince.Add(delay), Delay: duration(delay)}
}

// ShortfallStatus is what the pool lacks, what the next reconcile would add,
// and why the rest cannot be had.
type ShortfallStatus struct {
	Addresses int      `json:"addresses"`
	Planned   int      `json:"planned"` // addresses the next reconcile would add
	Unmet     int      `json:"unmet"`
	Reasons   []string `json:"reasons"`
}

// shortfallStatus explains a shortfall the next pass cannot meet: the subnet
// back-off, the ENI limit, max pods; and free addresses that pods cannot have
// because their ENI's host side is not set up.
func shortfallStatus(plan pool.Plan, snap pool.Snapshot, enis []ENIStatus, now time.Time) *ShortfallStatus {
	f := plan.Figures
	s := &ShortfallStatus{Addresses: f.Shortfall, Reasons: []string{}}
	newENIs := 0
	for _, a := range plan.Actions {
		n := a.Count
		if a.Prefixes {
			n *= pool.PrefixSize
		}
		switch a.Kind {
		case pool.CreateENI:
			newENIs++
			s.Planned += n
		case pool.Assign:
			s.Planned += n
		}
	}
	s.Unmet = max(f.Shortfall-s.Planned, 0)
	switch {
	case s.Unmet == 0:
	case now.Before(snap.GrowBlockedUntil):
		s.Reasons = append(s.Reasons, fmt.Sprintf("subnet back-off until %s: %s",
			snap.GrowBlockedUntil.Format(time.RFC3339), snap.GrowBlockedWhy))
	default:
		if f.MaxPods > 0 && f.Total+s.Planned >= f.MaxPods {
			s.Reasons = append(s.Reasons, fmt.Sprintf("max pods: the node may hold %d addresses", f.MaxPods))
		}
		if f.ENIs+newENIs >= f.MaxENIs {
			s.Reasons = append(s.Reasons, fmt.Sprintf("ENI limit: %d of %d ENIs (min(MAX_ENI, the instance's limit)), all full", f.ENIs+newENIs, f.MaxENIs))
		}
		if len(s.Reasons) == 0 {
			s.Reasons = append(s.Reasons, "the node's ENIs have no room for more addresses")
		}
	}
	for _, e := range enis {
		if !e.Ready && e.Free > 0 {
			s.Reasons = append(s.Reasons, fmt.Sprintf("ENI host side not ready: %d free addresses on %s (device %d) wait for its link to be set up",
				e.Free, e.ID, e.DeviceIndex))
		}
	}
	if s.Addresses == 0 && len(s.Reasons) == 0 {
		return nil
	}
	return s
}

// LastPass is the last reconcile pass: when, how long, what it did, and
// whether it failed.
type LastPass struct {
	Time          time.Time      `json:"time"`
	Duration      duration       `json:"duration"`
	Actions       int            `json:"actions"`
	Calls         map[string]int `json:"calls"`   // EC2 action -> calls
	Outcome       string         `json:"outcome"` // "ok" or "failed"
	Error         string         `json:"error,omitempty"`
	Cause         string         `json:"cause,omitempty"` // what the error means: credentials, endpoint, throttling ...
	LastLeakSweep time.Time      `json:"lastLeakSweep,omitzero"`
	Observed      string         `json:"observed,omitempty"` // where it read the ENIs: "imds" or "ec2: <why>"
}

// EC2Reads is when the passes read the node's ENIs from EC2 rather than IMDS
// (reconcile/observe.go): the last read, and when the safety net makes the
// next at the latest (zero when every pass reads EC2); ConfirmNeeded: the
// next pass reads EC2 to confirm this node's changes.
type EC2Reads struct {
	LastRead      time.Time `json:"lastRead,omitzero"`
	NextDue       time.Time `json:"nextDue,omitzero"`
	EveryPass     bool      `json:"everyPass,omitempty"`
	ConfirmNeeded bool      `json:"confirmNeeded,omitempty"`
}

func ec2Reads(node store.Node, meta store.PoolMeta, resync time.Duration) *EC2Reads {
	r := &EC2Reads{LastRead: meta.LastEC2Describe, EveryPass: resync <= 0, ConfirmNeeded: meta.ConfirmNeeded}
	if !r.EveryPass && !meta.LastEC2Describe.IsZero() {
		r.NextDue = reconcile.ResyncDue(node.InstanceID, meta.LastEC2Describe, resync)
	}
	return r
}

func lastPass(r store.ReconcileReport) *LastPass {
	p := &LastPass{Time: r.Time, Duration: duration(r.Duration), Actions: r.Actions, Calls: r.Calls,
		Outcome: "ok", Error: r.Error, Cause: r.Cause, LastLeakSweep: r.LastLeakSweep, Observed: r.Observed}
	if p.Calls == nil {
		p.Calls = map[string]int{}
	}
	if r.Error != "" {
		p.Outcome = "failed"
	}
	return p
}
