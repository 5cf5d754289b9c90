package settings

import (
	"net/netip"
	"strings"
	"testing"
)

func TestNodeNetworkDefaultsAreTheReferences(t *testing.T) {
	n, err := NodeNetwork(envIn(nil))
	if err != nil {
		t.Fatal(err)
	}
	if n.ExternalSNAT || !n.NodePort || n.Randomize != "prng" || n.ConnMark != 0x80 || len(n.ExcludeSNAT) != 0 {
		t.Fatalf("defaults %+v", n)
	}
}

func TestNodeNetworkReadsEachKnob(t *testing.T) {
	n, err := NodeNetwork(envIn(map[string]string{
		ExternalSNAT: "true", NodePortSupport: "false", RandomizeSNAT: "hashrandom",
		ConnMark: "0x100", ExcludeSNATCIDRs: "10.0.0.0/8, 192.168.0.0/16",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.168.0.0/16")}
	if !n.ExternalSNAT || n.NodePort || n.Randomize != "hashrandom" || n.ConnMark != 0x100 ||
		len(n.ExcludeSNAT) != 2 || n.ExcludeSNAT[0] != want[0] || n.ExcludeSNAT[1] != want[1] {
		t.Fatalf("got %+v", n)
	}
}

func TestNodeNetworkRejectsBadValuesByName(t *testing.T) {
	for name, value := range map[string]string{
		ExternalSNAT: "yes please", NodePortSupport: "2", RandomizeSNAT: "fully",
		ConnMark: "0", ExcludeSNATCIDRs: "10.0.0.0/8,fd00::/8",
	} {
		_, err := NodeNetwork(envIn(map[string]string{name: value}))
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%q: error %v does not name the variable", name, value, err)
		}
	}
}
