package whatif

import (
	"io"
	"maps"
	"strings"
	"testing"
	"time"

	"vpc-cni/internal/usage"
)

var ipv6Only = map[string]string{"ENABLE_IPv6": "true", "ENABLE_IPv4": "false", "ENABLE_PREFIX_DELEGATION": "true"}

// IPv6 pods on a Nitro type: the whole run costs the IPv6 pool one
// AssignIpv6Addresses (the node's first pass gives the /80), no other
// mutating call, and every pod gets an address at once; the study says so.
func TestWhatIfIPv6PoolTakesOneCallForTheRun(t *testing.T) {
	pointAtEmulators(t)
	var out strings.Builder
	grid := []Setting{{Env: ipv6Only, Interval: 30 * time.Second}}
	o := Options{InstanceType: "m5.large", ENILatency: 5 * time.Second, RefillDelay: time.Second}
	w := Steady(40, 5*time.Second)
	r, err := Run(w, grid[0], o)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{"AssignIpv6Addresses": 1}; !maps.Equal(r.IPv6Calls, want) || r.Mutating != 0 || r.Empty != 0 {
		t.Fatalf("IPv6 calls %v, mutating %d (%v), empty %d; want %v, 0, 0", r.IPv6Calls, r.Mutating, r.Calls, r.Empty, want)
	}
	if err := Study(&out, w, grid, o, ""); err != nil {
		t.Fatal(err)
	}
	if want := "the IPv6 pool took 1 EC2 call in the whole run, the node's start included (1 AssignIpv6Addresses)"; !strings.Contains(out.String(), want) {
		t.Fatalf("study output lacks %q:\n%s", want, out.String())
	}
}

// The cluster model has no IPv6 pool: it refuses such a setting, naming it.
func TestWhatIfClusterRefusesIPv6(t *testing.T) {
	err := ClusterStudy(io.Discard, []int{2}, []Setting{{Env: ipv6Only, Interval: 30 * time.Second}},
		ClusterOptions{Options: Options{InstanceType: "m5.large"}, PodsPerNode: 5})
	if !usage.Is(err) || !strings.Contains(err.Error(), "ENABLE_IPv6=true") || !strings.Contains(err.Error(), "IPv4 pool only") {
		t.Fatalf("cluster with IPv6: %v; want a usage error naming the setting", err)
	}
}
