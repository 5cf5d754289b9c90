package metrics

import (
	"strings"
	"testing"

	"vpc-cni/internal/testsupport/promtext"
	"vpc-cni/pool"
)

// The IPv6 series, and the reference's totals as it counts them: in IPv6
// mode 2^48 per /80 and the /128s assigned; in dual-stack mode the IPv4
// pool's (the reference has no dual-stack; IPv4 is what runs out); absent
// IPv6 series on an IPv4-only node.
func TestIPv6SeriesAndTheReferenceTotals(t *testing.T) {
	v4 := pool.Figures{ENIs: 1, MaxENIs: 3, Total: 6, Free: 4, Assigned: 2}
	for _, tc := range []struct {
		name                   string
		in                     Input
		total, assigned, ipv6a float64
		present                bool
	}{
		{"ipv6", Input{IPv6: &IPv6{IPv6Pods: true, Prefix: true, Assigned: 3, Cooling: 1, Egress: 3}}, 1 << 48, 3, 3, true},
		{"ipv6 before the /80", Input{IPv6: &IPv6{IPv6Pods: true}}, 0, 0, 0, true},
		{"dual-stack", Input{Figures: v4, IPv6: &IPv6{IPv6Pods: true, DualStack: true, Prefix: true, Assigned: 2}}, 6, 2, 2, true},
		{"ipv4 with v6if0", Input{Figures: v4, IPv6: &IPv6{Egress: 2}}, 6, 2, 0, false},
		{"ipv4", Input{Figures: v4}, 6, 2, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := Render(&b, tc.in); err != nil {
				t.Fatal(err)
			}
			got := promtext.Parse(t, tc.name, []byte(b.String()))
			if got["awscni_total_ip_addresses"] != tc.total || got["awscni_assigned_ip_addresses"] != tc.assigned {
				t.Errorf("awscni totals %v/%v; want %v/%v", got["awscni_total_ip_addresses"], got["awscni_assigned_ip_addresses"], tc.total, tc.assigned)
			}
			v, ok := got[`vpc_cni_ipv6_addresses{state="assigned"}`]
			if ok != tc.present || v != tc.ipv6a {
				t.Errorf("vpc_cni_ipv6_addresses assigned = %v (present %v); want %v (present %v)", v, ok, tc.ipv6a, tc.present)
			}
			if _, ok := got["vpc_cni_ipv6_prefix_present"]; ok != tc.present {
				t.Errorf("vpc_cni_ipv6_prefix_present present %v; want %v", ok, tc.present)
			}
			if _, ok := got["vpc_cni_egress_addresses"]; ok != (tc.in.IPv6 != nil) {
				t.Errorf("vpc_cni_egress_addresses present %v with %+v", ok, tc.in.IPv6)
			}
		})
	}
}
