package rebuild

import (
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"vpc-cni/netns"
)

func writeEntry(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// The cache reader keeps the entries that name an interface and skips what
// it cannot use, so one bad file does not hide the rest.
func TestReadCNICacheKeepsEntriesThatNameAnInterface(t *testing.T) {
	dir := t.TempDir()
	writeEntry(t, dir, "vpc-c1-eth0", `{"containerId":"c1","ifName":"eth0","networkName":"vpc","netns":"/run/netns/a",
		"cniArgs":[["K8S_POD_NAMESPACE","shop"],["K8S_POD_NAME","web-0"]],"result":{"ips":[{"address":"100.64.0.5/32"}]}}`)
	writeEntry(t, dir, "vpc-c2-eth0", `{"ifName":"eth0"}`) // no container ID
	writeEntry(t, dir, "garbage", `{not json`)
	got := ReadCNICache(dir)
	if len(got) != 1 || got[0].ContainerID != "c1" || got[0].arg("K8S_POD_NAME") != "web-0" || got[0].arg("K8S_POD_UID") != "" {
		t.Fatalf("cache %+v", got)
	}
	if none := ReadCNICache(filepath.Join(dir, "absent")); len(none) != 0 {
		t.Fatalf("a missing dir has entries: %+v", none)
	}
}

// An entry matches a pod's wiring by address, and by namespace and
// interface where both sides know them.
func TestMatchCacheByAddressNamespaceAndInterface(t *testing.T) {
	dir := t.TempDir()
	writeEntry(t, dir, "a", `{"containerId":"c1","ifName":"eth0","netns":"/run/netns/a","result":{"ips":[{"address":"100.64.0.5/32"}]}}`)
	writeEntry(t, dir, "b", `{"containerId":"c2","ifName":"eth1","result":{"ips":[{"address":"100.64.0.6/32"}]}}`)
	cache := ReadCNICache(dir)
	ip5, ip6 := netip.MustParseAddr("100.64.0.5"), netip.MustParseAddr("100.64.0.6")
	cases := []struct {
		name string
		w    netns.PodWiring
		want string // container ID, "" for no match
	}{
		{"address and namespace", netns.PodWiring{IP: ip5, Netns: "/run/netns/a", IfName: "eth0"}, "c1"},
		{"namespace unknown to the kernel", netns.PodWiring{IP: ip5}, "c1"},
		{"another namespace", netns.PodWiring{IP: ip5, Netns: "/run/netns/b"}, ""},
		{"another interface", netns.PodWiring{IP: ip6, IfName: "eth0"}, ""},
		{"entry without a namespace", netns.PodWiring{IP: ip6, Netns: "/run/netns/z", IfName: "eth1"}, "c2"},
		{"unknown address", netns.PodWiring{IP: netip.MustParseAddr("100.64.0.7")}, ""},
	}
	for _, c := range cases {
		hit, ok := MatchCache(cache, c.w)
		if ok != (c.want != "") || hit.ContainerID != c.want {
			t.Errorf("%s: got %q (%v), want %q", c.name, hit.ContainerID, ok, c.want)
		}
	}
}
