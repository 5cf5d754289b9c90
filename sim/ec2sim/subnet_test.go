package ec2sim

import (
	"net/netip"
	"testing"
)

func TestSubnetPoolAccounting(t *testing.T) {
	p, err := newSubnetPool(netip.MustParsePrefix("100.64.0.0/26")) // 64 addresses
	if err != nil {
		t.Fatal(err)
	}
	if p.free != 59 {
		t.Fatalf("free: want 64-5, got %d", p.free)
	}
	for _, a := range []string{"100.64.0.0", "100.64.0.1", "100.64.0.2", "100.64.0.3", "100.64.0.63"} {
		if p.isFree(netip.MustParseAddr(a)) || !p.reserved(netip.MustParseAddr(a)) {
			t.Fatalf("%s must be reserved", a)
		}
	}
	ips, ok := p.allocLowest(2)
	if !ok || ips[0].String() != "100.64.0.4" || ips[1].String() != "100.64.0.5" {
		t.Fatalf("lowest free: %v", ips)
	}
	pfx, ok := p.allocPrefix()
	if !ok || pfx.String() != "100.64.0.16/28" {
		t.Fatalf("first whole free /28: %v", pfx)
	}
	pfx2, _ := p.allocPrefix()
	if pfx2.String() != "100.64.0.32/28" {
		t.Fatalf("second /28: %v", pfx2)
	}
	if _, ok := p.allocPrefix(); ok { // .48/28 holds the broadcast address
		t.Fatal("the last /28 must not be delegated")
	}
	if p.free != 59-2-32 {
		t.Fatalf("free: %d", p.free)
	}
	p.releasePrefix(pfx)
	p.release(ips[0])
	if p.free != 59-1-16 || !p.isFree(ips[0]) {
		t.Fatalf("after release: %d", p.free)
	}
	if _, ok := p.allocLowest(p.free + 1); ok {
		t.Fatal("allocated more than free")
	}
}

func TestSubnetPoolSetFreeAndFragment(t *testing.T) {
	p, _ := newSubnetPool(netip.MustParsePrefix("100.64.0.0/24"))
	p.setFree(20)
	if p.free != 20 || !p.isFree(netip.MustParseAddr("100.64.0.4")) || p.isFree(netip.MustParseAddr("100.64.0.200")) {
		t.Fatalf("setFree keeps the lowest: free %d", p.free)
	}
	p.setFree(1000)
	if p.free != 251 {
		t.Fatalf("setFree up to the whole subnet: %d", p.free)
	}
	p.fragment()
	if _, ok := p.allocPrefix(); ok {
		t.Fatal("a fragmented subnet delegated a prefix")
	}
	if _, ok := p.allocLowest(100); !ok {
		t.Fatal("a fragmented subnet must still give single addresses")
	}
}

func TestMatchGlob(t *testing.T) {
	cases := []struct {
		pattern, s string
		want       bool
	}{
		{"aws-K8S-*", "aws-K8S-i-0123", true},
		{"aws-K8S-*", "aws-k8s-i", false},
		{"eni-?", "eni-a", true},
		{"eni-?", "eni-ab", false},
		{"*", "", true},
		{"a*b*c", "aXXbYYc", true},
		{"a*b*c", "aXXbYY", false},
		{"exact", "exact", true},
	}
	for _, tc := range cases {
		if got := matchGlob(tc.pattern, tc.s); got != tc.want {
			t.Errorf("matchGlob(%q, %q) = %v", tc.pattern, tc.s, got)
		}
	}
}

func TestNewValidates(t *testing.T) {
	for _, cfg := range []Config{
		{InstanceType: "nope.large"},
		{SubnetCIDR: netip.MustParsePrefix("10.0.0.0/24")},
		{SubnetCIDR: netip.MustParsePrefix("100.65.0.0/24")}, // outside the default VPC
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}
