package migrate

import (
	"net/netip"
	"strings"
	"testing"

	"vpc-cni/cloud"
	"vpc-cni/internal/awsnode"
	"vpc-cni/netns"
	"vpc-cni/settings"
)

// A node with ENIs of three profiles (blue configured with SNAT none, green
// configured but not in PROFILES, red not configured) and a primary ENI that
// carries a profile tag: each profile ENI is named with whose it is, the
// ones the node does not serve as getting no new pods; each checkpoint pod
// on one is marked with the ENI's profile and named; the primary's pods and
// a pod whose veth is gone are not.
func TestMarkProfilesNamesProfileENIsAndTheirPods(t *testing.T) {
	ip := netip.MustParseAddr
	tagged := func(id string, device int, profile string, addrs ...netip.Addr) cloud.ENIInfo {
		return cloud.ENIInfo{ID: id, Attached: true, DeviceIndex: device, PrimaryIP: ip("10.0.9." + id[len(id)-1:]),
			Secondary: addrs, Tags: map[string]string{settings.ProfileTag: profile}}
	}
	enis := []cloud.ENIInfo{
		tagged("eni-0", 0, "blue", ip("10.0.0.5")),
		tagged("eni-3", 3, "red", ip("10.0.3.5")),
		tagged("eni-1", 1, "blue", ip("10.0.1.5"), ip("10.0.1.6")),
		tagged("eni-2", 2, "green", ip("10.0.2.5")),
		{ID: "eni-4", Attached: false, DeviceIndex: -1, Tags: map[string]string{settings.ProfileTag: "blue"}},
	}
	plain, b, gone, g, r := planPod("plain", "10.0.0.5"), planPod("b", "10.0.1.5"), planPod("gone", "10.0.1.6"), planPod("g", "10.0.2.5"), planPod("r", "10.0.3.5")
	wired := []netns.PodWiring{wiredFor(plain, "10.0.0.5"), wiredFor(b, "10.0.1.5"), wiredFor(g, "10.0.2.5"), wiredFor(r, "10.0.3.5")}
	m, err := planMigration([]awsnode.Pod{plain, b, gone, g, r}, wired, enis, netns.VethPrefix)
	if err != nil {
		t.Fatal(err)
	}
	cfg := settings.Effective{Profiles: []settings.Profile{
		{Name: "blue", Allowed: true, SNAT: settings.SNATNone}, {Name: "green", SNAT: settings.SNATNode}}}
	found := m.markProfiles(enis, cfg)

	want := []string{
		"ENI eni-1 (device 1) carries vpc-cni.io/profile=blue: it is profile blue's, never the default pool's; it serves that profile's pods while its security groups are the profile's",
		"pod ns/b (c-b/eth0) holds 10.0.1.5 on ENI eni-1 of profile blue, which aws-node gave it without any profile: it is recorded as profile blue's pod",
		"PROFILE_BLUE_SNAT=none: its traffic leaving the VPC now keeps its own address",
		"ENI eni-2 (device 2) carries vpc-cni.io/profile=green: it is profile green's, never the default pool's; PROFILES does not name that profile on this node: it gets no new pods",
		"pod ns/g (c-g/eth0) holds 10.0.2.5 on ENI eni-2 of profile green",
		"ENI eni-3 (device 3) carries vpc-cni.io/profile=red: it is profile red's, never the default pool's; this node does not configure that profile (no PROFILE_RED_* keys): it gets no new pods",
		"pod ns/r (c-r/eth0) holds 10.0.3.5 on ENI eni-3 of profile red",
		"recreate it to give it the pool it should have (annotated vpc-cni.io/profile: blue if it is that profile's)",
		"recreate it to give it an address of the default pool (this node does not serve the profile)",
	}
	all := strings.Join(found, "\n")
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("no finding says %q; findings:\n%s", w, all)
		}
	}
	if len(found) != 6 || strings.Contains(all, "eni-0") || strings.Contains(all, "eni-4") || strings.Contains(all, "ns/gone") ||
		strings.Count(all, "keeps its own address") != 1 || strings.Count(all, "of the default pool (this node") != 2 {
		t.Errorf("findings:\n%s", all)
	}
	profiles := map[string]string{}
	for _, p := range m.pods {
		profiles[p.Pod] = p.Profile
	}
	if profiles["ns/plain"] != "" || profiles["ns/b"] != "blue" || profiles["ns/gone"] != "" || profiles["ns/g"] != "green" || profiles["ns/r"] != "red" {
		t.Errorf("pods' profiles %v", profiles)
	}
}
