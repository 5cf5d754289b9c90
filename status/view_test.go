package status

import (
	"strings"
	"testing"
	"time"

	"vpc-cni/pool"
)

// Free addresses on an ENI whose host side is not set up are not available
// to pods; status says so even when the policy sees no shortfall.
func TestShortfallNamesAnENIWhoseHostSideIsNotReady(t *testing.T) {
	enis := []ENIStatus{{ID: "eni-1", DeviceIndex: 1, Ready: false, Free: 3}}
	s := shortfallStatus(pool.Plan{}, pool.Snapshot{}, enis, time.Now())
	if s == nil || len(s.Reasons) != 1 || !strings.Contains(s.Reasons[0], "host side not ready") || !strings.Contains(s.Reasons[0], "eni-1") {
		t.Fatalf("shortfall %+v", s)
	}
	if s := shortfallStatus(pool.Plan{}, pool.Snapshot{}, []ENIStatus{{ID: "eni-0", Ready: true, Free: 3}}, time.Now()); s != nil {
		t.Fatalf("nothing to explain, got %+v", s)
	}
}

// What the next pass plans (prefixes counted in addresses) is not unmet.
func TestShortfallCountsPlannedGrowth(t *testing.T) {
	plan := pool.Plan{Figures: pool.Figures{Shortfall: 20, ENIs: 1, MaxENIs: 3, MaxPods: 100},
		Actions: []pool.Action{{Kind: pool.Assign, Count: 1, Prefixes: true}, {Kind: pool.CreateENI, Count: 4}}}
	s := shortfallStatus(plan, pool.Snapshot{}, nil, time.Now())
	if s.Planned != 20 || s.Unmet != 0 || len(s.Reasons) != 0 {
		t.Fatalf("shortfall %+v", s)
	}
}
