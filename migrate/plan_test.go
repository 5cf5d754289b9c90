package migrate

import (
	"net/netip"
	"strings"
	"testing"

	"vpc-cni/cloud"
	"vpc-cni/internal/awsnode"
	"vpc-cni/netns"
	"vpc-cni/store"
)

var (
	planENIs = []cloud.ENIInfo{
		{ID: "eni-a", Attached: true, PrimaryIP: netip.MustParseAddr("10.0.0.4"),
			Secondary: []netip.Addr{netip.MustParseAddr("10.0.0.5"), netip.MustParseAddr("10.0.0.6")}},
		{ID: "eni-b", Attached: true, PrimaryIP: netip.MustParseAddr("10.0.1.4"),
			Prefixes: []netip.Prefix{netip.MustParsePrefix("10.0.1.16/28")}},
		{ID: "eni-gone", Attached: false, Secondary: []netip.Addr{netip.MustParseAddr("10.0.2.5")}},
	}
)

func planPod(name, ip string) awsnode.Pod {
	return awsnode.Pod{Network: "aws-cni", ContainerID: "c-" + name, IfName: "eth0", IP: netip.MustParseAddr(ip),
		Namespace: "ns", Name: name}
}

func wiredFor(p awsnode.Pod, ip string) netns.PodWiring {
	return netns.PodWiring{HostVeth: netns.HostVethName(p.Namespace, p.Name), IP: netip.MustParseAddr(ip), Netns: "/run/netns/" + p.Name}
}

func TestPlanMigrationAdoptsPrunesAndFindsUnlisted(t *testing.T) {
	a, b, gone := planPod("a", "10.0.0.5"), planPod("b", "10.0.1.20"), planPod("gone", "10.0.0.6")
	stray := netns.PodWiring{HostVeth: "enistray000000", IP: netip.MustParseAddr("10.0.0.6")}
	m, err := planMigration([]awsnode.Pod{a, b, gone}, []netns.PodWiring{wiredFor(a, "10.0.0.5"), wiredFor(b, "10.0.1.20"), stray}, planENIs, netns.VethPrefix)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.adopt) != 2 || m.adopt[0].IP != a.IP || m.adopt[1].IP != b.IP {
		t.Fatalf("adopt %+v", m.adopt)
	}
	got := m.adopt[1]
	if got.Netns != "/run/netns/b" || got.HostVeth != netns.HostVethName("ns", "b") || got.Network != "aws-cni" || got.PodName != "b" {
		t.Errorf("assignment %+v", got)
	}
	if m.pods[1].ENI != "eni-b" || m.pods[2].Adopted || !strings.Contains(m.pods[2].Note, "host veth absent") {
		t.Errorf("pods %+v", m.pods)
	}
	if len(m.unlisted) != 1 || m.unlisted[0].HostVeth != "enistray000000" {
		t.Errorf("unlisted %+v", m.unlisted)
	}
}

func TestPlanMigrationRefusesNamingEveryProblem(t *testing.T) {
	off, primary, detached, rewired := planPod("off", "10.9.9.9"), planPod("p", "10.0.1.4"), planPod("d", "10.0.2.5"), planPod("r", "10.0.0.5")
	wired := []netns.PodWiring{wiredFor(off, "10.9.9.9"), wiredFor(primary, "10.0.1.4"), wiredFor(detached, "10.0.2.5"), wiredFor(rewired, "10.0.0.6")}
	_, err := planMigration([]awsnode.Pod{off, primary, detached, rewired}, wired, planENIs, netns.VethPrefix)
	for _, says := range []string{
		"10.9.9.9 (ns/off, c-off/eth0): EC2 does not list it",
		"10.0.1.4 (ns/p, c-p/eth0): it is the primary of eni-b",
		"10.0.2.5 (ns/d, c-d/eth0): EC2 does not list it",
		"routes 10.0.0.6, not 10.0.0.5",
		"nothing was changed",
	} {
		if err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("error %v does not say %q", err, says)
		}
	}
}

func TestAlreadyMigrated(t *testing.T) {
	a := planPod("a", "10.0.0.5")
	m, err := planMigration([]awsnode.Pod{a}, []netns.PodWiring{wiredFor(a, "10.0.0.5")}, planENIs, netns.VethPrefix)
	if err != nil {
		t.Fatal(err)
	}
	rec := store.Assignment{Key: a.Key(), IP: a.IP}
	other := store.Assignment{Key: "x/eth0", IP: netip.MustParseAddr("10.0.0.6")}
	for _, c := range []struct {
		have []store.Assignment
		want bool
	}{
		{nil, false},
		{[]store.Assignment{rec}, true},
		{[]store.Assignment{rec, other}, true},
		{[]store.Assignment{other}, false},
		{[]store.Assignment{{Key: a.Key(), IP: netip.MustParseAddr("10.0.0.6")}}, false},
	} {
		if got := alreadyMigrated(c.have, m); got != c.want {
			t.Errorf("alreadyMigrated(%v) = %v, want %v", c.have, got, c.want)
		}
	}
}

// The reference's IPv6 mode: a checkpoint row with "ipv6" is adopted when
// its veth routes that /128 and it lies in an attached ENI's /80, with the
// v4if0 address the kernel shows; one outside every /80 is refused by name.
func TestPlanMigrationIPv6Rows(t *testing.T) {
	enis := []cloud.ENIInfo{{ID: "eni-a", Attached: true, PrimaryIP: netip.MustParseAddr("10.0.0.4"),
		IPv6Prefixes: []netip.Prefix{netip.MustParsePrefix("2001:db8:0:1:1::/80")}}}
	six := awsnode.Pod{Network: "aws-cni", ContainerID: "c-six", IfName: "eth0", IPv6: netip.MustParseAddr("2001:db8:0:1:1::7"),
		Namespace: "ns", Name: "six"}
	w := netns.PodWiring{HostVeth: netns.HostVethName("ns", "six"), IP6: six.IPv6, Netns: "/run/netns/six",
		EgressIP: netip.MustParseAddr("169.254.172.9")}
	m, err := planMigration([]awsnode.Pod{six}, []netns.PodWiring{w}, enis, netns.VethPrefix)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.adopt) != 1 || m.adopt[0].IPv6 != six.IPv6 || m.adopt[0].IP.IsValid() || m.adopt[0].EgressIP != w.EgressIP || m.pods[0].ENI != "eni-a" {
		t.Fatalf("adopt %+v pods %+v", m.adopt, m.pods)
	}
	if !alreadyMigrated([]store.Assignment{{Key: "c-six/eth0", IPv6: six.IPv6}}, m) || alreadyMigrated([]store.Assignment{{Key: "c-other/eth0"}}, m) {
		t.Error("alreadyMigrated must compare the IPv6 too")
	}
	off := six
	off.IPv6 = netip.MustParseAddr("2001:db8:9::7")
	w.IP6 = off.IPv6
	if _, err := planMigration([]awsnode.Pod{off}, []netns.PodWiring{w}, enis, netns.VethPrefix); err == nil || !strings.Contains(err.Error(), "2001:db8:9::7 (ns/six, c-six/eth0): EC2 does not list it in a /80") {
		t.Fatalf("a /128 outside every /80: %v", err)
	}
}
