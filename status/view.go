package status

import (
	"fmt"
	"net/netip"
	"time"

	"vpc-cni/internal/printers"
	"vpc-cni/pool"
	"vpc-cni/reconcile"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// podStatus names the pod of an assignment.
func podStatus(a store.Assignment) PodStatus {
	return PodStatus{Pod: PodName(a.PodNamespace, a.PodName), Namespace: a.PodNamespace, Name: a.PodName,
		ContainerID: a.ContainerID, IfName: a.IfName, IP: addrText(a.IP), IPv6: addrText(a.IPv6),
		EgressIP: addrText(a.EgressIP), ENIID: a.ENIID, Since: a.Time, Profile: string(a.Profile)}
}

// addrText is the address, or "" for none.
func addrText(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}

// PodName is "namespace/name", or "-" for an interface added without
// Kubernetes arguments.
func PodName(namespace, name string) string {
	if name == "" {
		return "-"
	}
	return namespace + "/" + name
}

func nodeStatus(n store.Node) *NodeStatus {
	return &NodeStatus{Node: n, Limits: LimitsStatus{MaxENIs: n.Limits.MaxENIs, IPv4PerENI: n.Limits.IPv4PerENI}}
}

// Knobs is every knob as resolved now and as the last pass used it.
func Knobs(now, last []settings.Value) []KnobStatus {
	prev := map[string]settings.Value{}
	for _, v := range last {
		prev[v.Name] = v
	}
	out := make([]KnobStatus, 0, len(now))
	for _, v := range now {
		k := KnobStatus{Value: v, Default: settings.DefaultOf(v.Name)}
		if p, ok := prev[v.Name]; ok {
			k.LastPass, k.Differs = &p, p.Value != v.Value
		}
		out = append(out, k)
	}
	return out
}

func excessStatus(plan pool.Plan, delay time.Duration) *ExcessStatus {
	if plan.Figures.Excess == 0 || plan.ExcessSince.IsZero() {
		return nil
	}
	return &ExcessStatus{Addresses: plan.Figures.Excess, Since: plan.ExcessSince,
		ReleaseAt: plan.ExcessSince.Add(delay), Delay: printers.Duration(delay)}
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
			s.Reasons = append(s.Reasons, "max pods: the node may hold "+printers.Plural(f.MaxPods, "address", "addresses"))
		}
		if f.ENIs+newENIs >= f.MaxENIs {
			s.Reasons = append(s.Reasons, fmt.Sprintf("ENI limit: %d of %s (min(MAX_ENI, the instance's limit)), all full", f.ENIs+newENIs, printers.Plural(f.MaxENIs, "ENI", "ENIs")))
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

func ec2Reads(node store.Node, meta store.PoolMeta, resync time.Duration) *EC2Reads {
	r := &EC2Reads{LastRead: meta.LastEC2Describe, EveryPass: resync <= 0, ConfirmNeeded: meta.ConfirmNeeded}
	if !r.EveryPass && !meta.LastEC2Describe.IsZero() {
		r.NextDue = reconcile.ResyncDue(node.InstanceID, meta.LastEC2Describe, resync)
	}
	return r
}

func lastPass(r store.ReconcileReport) *LastPass {
	p := &LastPass{Time: r.Time, Duration: printers.Duration(r.Duration), Actions: r.Actions, Calls: r.Calls,
		Outcome: "ok", Error: r.Error, Cause: r.Cause, LastLeakSweep: r.LastLeakSweep, Observed: r.Observed}
	if p.Calls == nil {
		p.Calls = map[string]int{}
	}
	if r.Error != "" {
		p.Outcome = "failed"
	}
	return p
}
