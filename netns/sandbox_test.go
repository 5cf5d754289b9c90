package netns

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/containernetworking/plugins/pkg/ns"

	"vpc-cni/internal/testsupport/testenv"
)

func TestSandboxAliasRoundTrips(t *testing.T) {
	for _, tc := range []struct {
		s    Sandbox
		want bool // said in an alias
	}{
		{Sandbox{"vpc", strings.Repeat("a", 64), "eth0"}, true},
		{Sandbox{"k8s-pod-network", "c1", "net1"}, true},
		{Sandbox{"", "c1", "eth0"}, false},
		{Sandbox{"vpc", "", "eth0"}, false},
		{Sandbox{"vpc", "c1", ""}, false},
		{Sandbox{"vpc", "c/1", "eth0"}, false},
		{Sandbox{"vpc", strings.Repeat("a", 250), "eth0"}, false},
	} {
		alias := tc.s.alias()
		got, ok := SandboxOf(alias)
		if (alias != "") != tc.want || ok != tc.want || (ok && got != tc.s) {
			t.Errorf("%+v: alias %q read back as %+v %v", tc.s, alias, got, ok)
		}
	}
	for _, alias := range []string{"", "uplink", "vpc-cni/", "vpc-cni/vpc/c1", "vpc-cni/vpc//eth0", "vpc-cni/a/b/c/d"} {
		if s, ok := SandboxOf(alias); ok {
			t.Errorf("SandboxOf(%q) = %+v, want not ours", alias, s)
		}
	}
}

// SetupPod writes the sandbox on the host veth, and DiscoverPods reads it
// back with the pod's wiring.
func TestPrivilegedDiscoverPodsNamesTheSandboxTheVethSays(t *testing.T) {
	node := newNode(t)
	_, p := newPod(t, "named", "100.64.4.81", 0)
	p.Sandbox = Sandbox{Network: "vpc", ContainerID: "c-named", IfName: "eth0"}
	_, legacy := newPod(t, "legacy", "100.64.4.82", 0)
	wirePod(t, node, p)
	wirePod(t, node, legacy)
	var wired []PodWiring
	inNS(t, node, func() (err error) { wired, err = DiscoverPods(); return err })
	got := map[string]Sandbox{}
	for _, w := range wired {
		got[w.HostVeth] = w.Sandbox
	}
	if got[p.HostVeth] != p.Sandbox || got[legacy.HostVeth] != (Sandbox{}) {
		t.Fatalf("discovered sandboxes %+v, want %+v on %s and none on %s", got, p.Sandbox, p.HostVeth, legacy.HostVeth)
	}
}

// Tearing down a stale sandbox leaves the pod's newer sandbox, whose host
// veth has the same name (it is the pod's): one in the same namespace (a
// runtime that ADDs again in it) names another sandbox; one made by an
// older version names none and leads into another namespace. The stale
// sandbox's own leftovers (a rule of an address no link routes) go.
func TestPrivilegedTeardownPodLeavesTheNewerSandboxOfTheSamePod(t *testing.T) {
	for _, tc := range []struct {
		name  string
		newer func(t *testing.T, stale Pod) (ns.NetNS, Pod)
	}{
		{"same namespace, another sandbox named", func(t *testing.T, stale Pod) (ns.NetNS, Pod) {
			p := stale
			p.IP, p.Sandbox.ContainerID = netip.MustParseAddr("100.64.4.92"), "c-newer"
			return nil, p
		}},
		{"another namespace, no sandbox named", func(t *testing.T, stale Pod) (ns.NetNS, Pod) {
			n, p := newPod(t, "web", "100.64.4.92", 0)
			return n, p
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := newNode(t)
			staleNS, stale := newPod(t, "web", "100.64.4.91", 0)
			stale.Sandbox = Sandbox{Network: "vpc", ContainerID: "c-stale", IfName: "eth0"}
			wirePod(t, node, stale)
			newerNS, newer := tc.newer(t, stale)
			if newerNS != nil {
				testenv.DeleteNetNS(staleNS) // the stale sandbox's namespace went
				waitVethGone(t, node, stale.HostVeth)
			}
			wirePod(t, node, newer)
			inNS(t, node, func() error { return SetPodRules(stale.IP, MainTable) }) // a leftover of the stale sandbox

			inNS(t, node, func() error { return TeardownPod(stale) })
			inNS(t, node, func() error { return CheckPod(newer) })
			st := listHost(t, node)
			if !slices.Equal(st.Veths, []string{newer.HostVeth}) || len(st.Routes) != 1 || st.Routes[0].IP != newer.IP {
				t.Fatalf("after tearing down the stale sandbox: %+v, want only %s's wiring", st, newer.IP)
			}
			for _, r := range st.Rules {
				if r.IP == stale.IP {
					t.Errorf("the stale sandbox's rule %+v is left", r)
				}
			}
		})
	}
}
