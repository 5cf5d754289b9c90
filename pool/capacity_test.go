package pool

import (
	"strings"
	"testing"
)

// PodCapacity follows the published formulas: eni-max-pods.txt (secondary
// IPs), the reference's max-pods-calculator.sh (prefix delegation with 16
// addresses a slot, --cni-max-eni, custom networking's primary ENI left out,
// the 110/250 ceiling at more than 30 vCPUs) and Karpenter's ENILimitedPods
// (reserved ENIs subtracted before the product).
func TestPodCapacityFollowsThePublishedFormulas(t *testing.T) {
	m5large := Limits{MaxENIs: 3, IPv4PerENI: 10, VCPUs: 2}
	m54xl := Limits{MaxENIs: 8, IPv4PerENI: 30, VCPUs: 16}
	m516xl := Limits{MaxENIs: 15, IPv4PerENI: 50, VCPUs: 64}
	t3nano := Limits{MaxENIs: 2, IPv4PerENI: 2, VCPUs: 2}
	cases := []struct {
		name    string
		lim     Limits
		cfg     Config
		notOurs int
		mode    string
		want    int
	}{
		{"secondary IPs: ENIs x (IPv4 - 1) + 2", m5large, Config{}, 0, ModeSecondaryIP, 3*9 + 2},
		{"secondary IPs are never capped (eni-max-pods.txt)", m54xl, Config{}, 0, ModeSecondaryIP, 8*29 + 2},
		{"custom networking leaves the primary out", m5large, Config{CustomNetworking: true}, 0, ModeSecondaryIP, 2*9 + 2},
		{"MAX_ENI below the limit (--cni-max-eni)", m5large, Config{MaxENI: 2}, 0, ModeSecondaryIP, 2*9 + 2},
		{"MAX_ENI and custom networking", m54xl, Config{MaxENI: 4, CustomNetworking: true}, 0, ModeSecondaryIP, 3*29 + 2},
		{"an ENI not ours (Karpenter's reserved ENIs)", m5large, Config{}, 1, ModeSecondaryIP, 2*9 + 2},
		{"every ENI taken: only host-network pods", m5large, Config{CustomNetworking: true}, 2, ModeSecondaryIP, 2},
		{"prefixes: capped at 110 at 30 vCPUs or fewer", m5large, Config{PrefixDelegation: true}, 0, ModePrefix, 110},
		{"prefixes, 16 vCPUs", m54xl, Config{PrefixDelegation: true}, 0, ModePrefix, 110},
		{"prefixes: 250 above 30 vCPUs", m516xl, Config{PrefixDelegation: true}, 0, ModePrefix, 250},
		{"prefixes under the cap: 16 per slot + 2", t3nano, Config{PrefixDelegation: true}, 0, ModePrefix, 2*1*16 + 2},
		{"prefixes, custom networking, under the cap", t3nano, Config{PrefixDelegation: true, CustomNetworking: true}, 0, ModePrefix, 1*1*16 + 2},
		{"exactly 30 vCPUs is the low ceiling", Limits{MaxENIs: 8, IPv4PerENI: 30, VCPUs: 30}, Config{PrefixDelegation: true}, 0, ModePrefix, 110},
		{"31 vCPUs is the high one", Limits{MaxENIs: 8, IPv4PerENI: 30, VCPUs: 31}, Config{PrefixDelegation: true}, 0, ModePrefix, 250},
		{"vCPUs unknown: the low ceiling", Limits{MaxENIs: 15, IPv4PerENI: 50}, Config{PrefixDelegation: true}, 0, ModePrefix, 110},
		{"MAX_PODS_CAP replaces EKS's ceiling", m516xl, Config{PrefixDelegation: true, MaxPodsCap: 200}, 0, ModePrefix, 200},
		{"MAX_PODS_CAP above the addresses", t3nano, Config{PrefixDelegation: true, MaxPodsCap: 500}, 0, ModePrefix, 34},
		{"MAX_PODS_CAP does not touch secondary IPs", m54xl, Config{MaxPodsCap: 50}, 0, ModeSecondaryIP, 8*29 + 2},
		{"IPv6 only: the ceiling alone", m5large, Config{IPv6: true, IPv4Off: true, PrefixDelegation: true}, 0, ModeIPv6, 110},
		{"IPv6 only, 64 vCPUs", m516xl, Config{IPv6: true, IPv4Off: true}, 0, ModeIPv6, 250},
		{"IPv6 only ignores ENIs not ours", m5large, Config{IPv6: true, IPv4Off: true}, 2, ModeIPv6, 110},
		{"IPv6 and IPv4: the IPv4 addresses bound it too", m5large, Config{IPv6: true}, 0, ModeIPv6, 3*9 + 2},
		{"MAX_PODS below the formula", m5large, Config{MaxPods: 20}, 0, ModeSecondaryIP, 20},
		{"MAX_PODS above the formula: what the addresses hold", m5large, Config{MaxPods: 110}, 0, ModeSecondaryIP, 29},
		{"MAX_PODS above the ceiling: the operator's word", m5large, Config{PrefixDelegation: true, MaxPods: 300}, 0, ModePrefix, 300},
		{"MAX_PODS with IPv6 only", m5large, Config{IPv6: true, IPv4Off: true, MaxPods: 500}, 0, ModeIPv6, 500},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := PodCapacity(tc.lim, tc.cfg, tc.notOurs)
			if got.MaxPods != tc.want || got.Mode != tc.mode {
				t.Fatalf("max pods %d mode %s, want %d %s: %+v", got.MaxPods, got.Mode, tc.want, tc.mode, got)
			}
			if got.Formula > 0 && got.Formula != got.Addresses+HostNetworkPods {
				t.Errorf("formula %d is not addresses %d + 2", got.Formula, got.Addresses)
			}
			if got.Cap > 0 && got.CapWhy == "" {
				t.Errorf("cap %d with no reason", got.Cap)
			}
		})
	}
}

// What it shows says why: the ceiling's source and the knobs that shaped it.
func TestPodCapacitySaysWhy(t *testing.T) {
	got := PodCapacity(Limits{MaxENIs: 15, IPv4PerENI: 50}, Config{PrefixDelegation: true, CustomNetworking: true}, 1)
	notes := strings.Join(got.Notes, "; ")
	for _, want := range []string{"not vpc-cni's", "custom networking"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes %q lack %q", notes, want)
		}
	}
	if !strings.Contains(got.CapWhy, "vCPUs unknown") || !strings.Contains(got.CapWhy, "MAX_PODS_CAP=250") {
		t.Errorf("cap reason %q", got.CapWhy)
	}
}

// The policy holds no more addresses than the capacity: under prefix
// delegation that is now the ceiling, not the secondary-IP formula (29 on
// an m5.large, which stopped the pool at 2 prefixes).
func TestPrefixPoolGrowsToTheCeiling(t *testing.T) {
	c := Defaults()
	c.PrefixDelegation, c.MinIPTarget = true, 200
	s := newSim(t, Limits{MaxENIs: 3, IPv4PerENI: 10, VCPUs: 2}, c) // m5.large
	s.steady()
	if got := s.count(); got.slots != 7 { // ceil(110/16)
		t.Fatalf("%d prefixes at steady state, want 7", got.slots)
	}
	if f := s.plan().Figures; f.MaxPods != 110 {
		t.Errorf("max pods %d, want 110", f.MaxPods)
	}
}
