package status

import (
	"errors"
	"net/netip"
	"strings"
	"time"

	"vpc-cni/metrics"
	"vpc-cni/pool"
	"vpc-cni/reconcile"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// MetricsInput is the pool status and the store's counters as metrics reads them.
func MetricsInput(st *store.Store, knobs settings.Inputs, now time.Time) (metrics.Input, error) {
	status, err := Load(st, knobs, now)
	if err != nil {
		return metrics.Input{}, err
	}
	in := metrics.Input{Figures: status.Figures, Assignments: status.Assignments, Intents: status.Intents,
		GrowBlocked: status.GrowBlocked != "", Counters: map[string]int64{}}
	if status.Full != nil {
		in.Full = *status.Full
	}
	for _, e := range status.ENIs {
		in.ENIs = append(in.ENIs, metrics.ENI{ID: e.ID, DeviceIndex: e.DeviceIndex, Free: e.Free,
			Cooling: e.Cooling, Assigned: e.Assigned, Releasing: e.Releasing})
	}
	if r := status.LastReconcile; r != nil {
		in.LastReconcile, in.LastDuration, in.LastCalls, in.LastFailed = r.Time, r.Duration.Std(), r.Calls, r.Error != ""
	}
	err = st.View(func(tx *store.Tx) (err error) { in.Counters, err = tx.Counters(); return err })
	if err != nil && !errors.Is(err, store.ErrNotInitialized) {
		return in, err
	}
	in.Reference = referenceFigures(status, in.Counters)
	if v := status.IPv6; v != nil {
		in.IPv6 = &metrics.IPv6{IPv6Pods: v.Mode == pool.FamilyIPv6 || v.Mode == pool.FamilyDualStack,
			DualStack: v.Mode == pool.FamilyDualStack, Prefix: v.Prefix != "", Assigned: v.Assigned,
			Cooling: v.Cooling, Stale: v.Stale, Egress: v.EgressAssigned}
	}
	return in, nil
}

// referenceFigures are the figures of the reference's awscni_* series.
func referenceFigures(s PoolStatus, counters map[string]int64) metrics.Reference {
	r := metrics.Reference{NoAddress: counters[store.CounterNoFreeAddress], EC2Calls: map[string]int64{}}
	if s.Node != nil && s.Node.Limits.IPv4PerENI > 1 {
		r.IPMax = s.Figures.MaxENIs * (s.Node.Limits.IPv4PerENI - 1)
		if s.Figures.Mode == "prefix" {
			r.IPMax *= 16
		}
	}
	prefixes := map[string]bool{}
	for _, e := range s.ENIs {
		for _, a := range e.Addresses {
			if p, err := netip.ParsePrefix(a.Block); err == nil && p.Bits() < 32 {
				prefixes[a.Block] = true
			}
		}
	}
	r.Prefixes = len(prefixes)
	for name, n := range counters {
		if action, ok := strings.CutPrefix(name, reconcile.CounterEC2Calls); ok {
			r.EC2Calls[action] = n
		} else if rest, ok := strings.CutPrefix(name, reconcile.CounterEC2Errors); ok {
			api, code, _ := strings.Cut(rest, "_") // EC2 action names have no underscore
			r.EC2Errors = append(r.EC2Errors, metrics.APIError{API: api, Code: code, N: n})
		}
	}
	return r
}
