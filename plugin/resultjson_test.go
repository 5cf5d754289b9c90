package plugin

import (
	"bytes"
	"math/rand"
	"net"
	"net/netip"
	"testing"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"

	"vpc-cni/netns"
	"vpc-cni/store"
)

// samePrint checks that printResult writes what PrintTo writes, byte for
// byte, in every CNI version the plugin speaks (or in those given).
func samePrint(t *testing.T, name string, r *current.Result, versions ...string) {
	t.Helper()
	if versions == nil {
		versions = []string{"1.1.0", "1.0.0", "0.4.0", "0.3.1"}
	}
	for _, v := range versions {
		res, err := r.GetAsVersion(v)
		if err != nil {
			continue
		}
		var want, got bytes.Buffer
		wantErr := res.PrintTo(&want)
		gotErr := printResult(&got, res)
		if (wantErr == nil) != (gotErr == nil) {
			t.Fatalf("%s %s: error %v, PrintTo's %v", name, v, gotErr, wantErr)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("%s %s: wrote\n%s\nPrintTo writes\n%s", name, v, got.Bytes(), want.Bytes())
		}
	}
}

func TestPrintResultAsPrintToForThePluginsResults(t *testing.T) {
	cfg := &Config{}
	args := &skel.CmdArgs{Netns: "/var/run/netns/cni-<1&2>"}
	wired := netns.Wired{HostVeth: "eni1a2b3c4d5e6", HostMAC: "02:00:00:00:00:01", PodIf: "eth0", PodMAC: "02:00:00:00:00:02",
		Egress: &netns.Wired{HostVeth: "egr1a2b3c4d5e6", HostMAC: "02:00:00:00:00:03", PodIf: "v4if0", PodMAC: "02:00:00:00:00:04"}}
	v4, v6 := netip.MustParseAddr("100.64.1.7"), netip.MustParseAddr("fd00:1:2:3:4::9")
	for name, a := range map[string]store.Assignment{
		"ipv4": {IP: v4}, "ipv6": {IPv6: v6}, "dual": {IP: v4, IPv6: v6},
		"ipv6 with egress": {IPv6: v6, EgressIP: netip.MustParseAddr("169.254.172.9")},
	} {
		w := wired
		if !a.EgressIP.IsValid() {
			w.Egress = nil
		}
		samePrint(t, name, interfaceResult(cfg, args, a, w))
		samePrint(t, name+" ipam", ipamResult(cfg, a, netip.MustParsePrefix("100.64.0.0/16")))
	}
}

func TestPrintResultAsPrintToForAnyResult(t *testing.T) {
	one, minus := 1, -7
	samePrint(t, "empty", &current.Result{})
	samePrint(t, "odd", &current.Result{
		CNIVersion: "1.1.0",
		Interfaces: []*current.Interface{{}, {Name: "a\u2028\"b\\", Mtu: -1, PciID: "0000:00:1f.6", SocketPath: "/run/s<>", Sandbox: "é"}},
		IPs:        []*current.IPConfig{{}, {Interface: &minus, Gateway: net.IPv4(1, 2, 3, 4)}},
		Routes:     []*types.Route{{}, {MTU: 9001, AdvMSS: 1460, Priority: 1 << 40, Table: &one, Scope: &minus}},
		DNS:        types.DNS{Nameservers: []string{"10.0.0.2", ""}, Domain: "x", Search: []string{"a", "b"}, Options: []string{"ndots:5"}},
	})
	// Converting a nil entry to 0.4.0 panics in the library.
	samePrint(t, "nil entry", &current.Result{Interfaces: []*current.Interface{nil}}, "1.0.0")
	samePrint(t, "bad gateway", &current.Result{IPs: []*current.IPConfig{{Gateway: net.IP{1, 2, 3}}}})
	samePrint(t, "not utf-8", &current.Result{Interfaces: []*current.Interface{{Name: "a\xffb"}}})
	rng := rand.New(rand.NewSource(1))
	for i := range 300 {
		samePrint(t, "random", randomResult(rng, i))
	}
}

func randomResult(rng *rand.Rand, i int) *current.Result {
	str := func() string {
		return []string{"", "eth0", "<&>", "ü\t\n", "\u2029", "a\x00", "\xc3"}[rng.Intn(7)]
	}
	n := func() int { return []int{0, 1, -1, 1500, 1 << 53, 1<<53 + 1, -1 << 62}[rng.Intn(7)] }
	ptr := func() *int {
		if rng.Intn(2) == 0 {
			return nil
		}
		v := n()
		return &v
	}
	ip := func() net.IP {
		return [][]byte{nil, net.IPv4(100, 64, 0, byte(i)), net.ParseIP("fd00::1"), {}}[rng.Intn(4)]
	}
	ipnet := func() net.IPNet { return net.IPNet{IP: ip(), Mask: net.CIDRMask(rng.Intn(33), 32)} }
	r := &current.Result{CNIVersion: []string{"", "1.0.0", "1.1.0"}[rng.Intn(3)]}
	for range rng.Intn(3) {
		r.Interfaces = append(r.Interfaces, &current.Interface{Name: str(), Mac: str(), Mtu: n(), Sandbox: str(), SocketPath: str(), PciID: str()})
		r.IPs = append(r.IPs, &current.IPConfig{Interface: ptr(), Address: ipnet(), Gateway: ip()})
		r.Routes = append(r.Routes, &types.Route{Dst: ipnet(), GW: ip(), MTU: n(), AdvMSS: n(), Priority: n(), Table: ptr(), Scope: ptr()})
	}
	if rng.Intn(2) == 0 {
		r.DNS = types.DNS{Domain: str(), Nameservers: []string{str()}, Search: []string{str(), str()}}
	}
	return r
}
