package status

import (
	"errors"
	"time"

	"vpc-cni/metrics"
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
	return in, nil
}
