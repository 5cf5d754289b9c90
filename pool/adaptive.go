package pool

import "time"

// Adaptive growth (Config.AdaptiveWindow > 0, ADAPTIVE_GROWTH_WINDOW).
//
// With pods arriving steadily, WARM_IP_TARGET=1 pays one EC2 call per pod:
// every pass tops the pool up by the one address the last pod took. Adaptive
// growth keeps the trigger as it is (the rule's shortfall) but sizes the grow
// by the recent arrival rate: it expects as many pods in the next window as
// arrived in the last one, so one call serves a window's worth of pods. The
// arrivals are read from the snapshot itself: an Assigned address's Since is
// when its pod took it, so the policy stays pure and the ADD path pays nothing.
//
// Under the IP target rules a grow brings free to W + waiting + ahead (it
// still happens only when free < W + waiting or held < MIN); under
// WARM_PREFIX_TARGET a grow covers max(waiting, 1) + ahead addresses. Releases
// keep the look-ahead: excess is what lies beyond W + ahead. At rest no pod
// arrived within the window, ahead is 0, and after the release delay the pool
// returns to exactly its target. The WARM_ENI_TARGET rule already grows by
// whole ENIs and ignores the knob.

// RecentArrivals counts the pods of pool p that took an address in
// (now-window, now]: the Assigned addresses of its ENIs whose Since lies in
// that span. 0 when window <= 0.
func RecentArrivals(s Snapshot, p Pool, now time.Time, window time.Duration) int {
	if window <= 0 {
		return 0
	}
	from := now.Add(-window)
	n := 0
	for i := range s.ENIs {
		if !s.ENIs[i].ServesPool(p) {
			continue
		}
		for j := range s.ENIs[i].Blocks {
			for _, a := range s.ENIs[i].Blocks[j].Addrs {
				if a.State == Assigned && a.Since.After(from) && !a.Since.After(now) {
					n++
				}
			}
		}
	}
	return n
}
