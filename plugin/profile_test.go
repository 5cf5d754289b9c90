package plugin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"

	"vpc-cni/pool"
)

// profileNode: the primary ENI (default pool) and gold's ENI at device 1,
// one free address each; gold and blue configured, PROFILES=gold.
func profileNode(t *testing.T) (*testNode, string) {
	gold := eni(1, "100.64.1.10")
	gold.Profile = "gold"
	n := newTestNode(t).seed(twoENIs, eni(0, "100.64.0.10"), gold)
	cfg := filepath.Join(t.TempDir(), "config")
	text := "PROFILE_GOLD_SECURITY_GROUPS=sg-1\nPROFILE_BLUE_SECURITY_GROUPS=sg-2\nPROFILES=gold\n"
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return n, cfg
}

// annotated is the configuration with the pod's annotations as containerd
// passes them when the conflist declares the capability.
func (n *testNode) annotated(cfg string, annotations map[string]string) []byte {
	extra := map[string]any{"configFile": cfg}
	if annotations != nil {
		extra["runtimeConfig"] = map[string]any{PodAnnotationsCapability: annotations}
	}
	return n.conf("1.1.0", extra)
}

func TestAPodGetsItsProfilesAddressAndADefaultPodNever(t *testing.T) {
	n, cfg := profileNode(t)
	out, err := n.run("ADD", n.args("g1", n.annotated(cfg, map[string]string{"vpc-cni.io/profile": "gold", "other": "x"})))
	if err != nil {
		t.Fatal(err)
	}
	if ip := resultIP(t, out); ip.String() != "100.64.1.10" || n.host.pods[ip].Table != 2 {
		t.Fatalf("gold pod got %s on table %d, want gold's 100.64.1.10 routed by its ENI's table 2", ip, n.host.pods[ip].Table)
	}
	if a, _ := n.assignment("g1/eth0"); a.Profile != "gold" || a.ENIID != "eni-1" {
		t.Fatalf("assignment %+v", a)
	}
	out, err = n.run("ADD", n.args("d1", n.annotated(cfg, map[string]string{"other": "x"})))
	if err != nil {
		t.Fatal(err)
	}
	if ip := resultIP(t, out); ip.String() != "100.64.0.10" {
		t.Fatalf("default pod got %s", ip)
	}
	// Both pools are empty: a default pod does not take gold's, nor the reverse.
	_, err = n.run("ADD", n.args("d2", n.annotated(cfg, nil)))
	wantCode(t, err, types.ErrTryAgainLater, "no free address in the pool")
	_, err = n.run("ADD", n.args("g2", n.annotated(cfg, map[string]string{"vpc-cni.io/profile": "gold"})))
	wantCode(t, err, types.ErrTryAgainLater, "no free address in profile gold's pool")
}

func TestAPodsProfileMustBeConfiguredAndAllowed(t *testing.T) {
	cases := []struct{ profile, want, notOthers string }{
		{"red", "vpc-cni.io/profile=red names a profile this node does not have (no PROFILE_RED_* keys)", "gold"},
		{"blue", "vpc-cni.io/profile=blue names a profile this node does not serve (not in PROFILES, file ", "gold"},
		{"Gold", `vpc-cni.io/profile="Gold": a profile name is lower-case letters`, "blue"},
	}
	for _, c := range cases {
		t.Run(c.profile, func(t *testing.T) {
			n, cfg := profileNode(t)
			out, err := n.run("ADD", n.args("p1", n.annotated(cfg, map[string]string{"vpc-cni.io/profile": c.profile})))
			wantCode(t, err, types.ErrInvalidNetworkConfig, c.want)
			if strings.Contains(err.Error(), c.notOthers) {
				t.Errorf("the refusal names the node's other profile %s: %v", c.notOthers, err)
			}
			if out != "" || len(n.host.pods) != 0 || n.state("100.64.0.10") != pool.Free || n.state("100.64.1.10") != pool.Free {
				t.Fatalf("the refused ADD changed state: printed %q, pods %v", out, n.host.pods)
			}
		})
	}
}

// DEL and GC go by the stored assignment: a DEL without the annotation, or
// with a bad one, or after the profile left the configuration, gives gold's
// address back to gold.
func TestDelUsesTheStoredProfileNeverTheAnnotation(t *testing.T) {
	n, cfg := profileNode(t)
	if _, err := n.run("ADD", n.args("g1", n.annotated(cfg, map[string]string{"vpc-cni.io/profile": "gold"}))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte("WARM_ENI_TARGET=1\n"), 0o644); err != nil { // gold is gone
		t.Fatal(err)
	}
	bad := n.conf("1.1.0", map[string]any{"configFile": cfg, "runtimeConfig": map[string]any{PodAnnotationsCapability: "not a map"}})
	if _, err := n.run("DEL", n.args("g1", bad)); err != nil {
		t.Fatalf("DEL: %v", err)
	}
	if _, ok := n.assignment("g1/eth0"); ok || n.state("100.64.1.10") != pool.Cooling {
		t.Fatalf("after DEL: .1.10 is %s", n.state("100.64.1.10"))
	}
}

func TestABadRuntimeConfigFailsOnlyTheAdd(t *testing.T) {
	n, cfg := profileNode(t)
	bad := n.conf("1.1.0", map[string]any{"configFile": cfg, "runtimeConfig": map[string]any{PodAnnotationsCapability: []int{1}}})
	_, err := n.run("ADD", n.args("p1", bad))
	wantCode(t, err, types.ErrInvalidNetworkConfig, `runtimeConfig["io.kubernetes.cri.pod-annotations"]`)
}

// A profile bound to namespaces on the node refuses a pod of any other
// namespace (or of none) with code 7 naming the profile and the pod's
// namespace, and takes nothing; a pod of a bound namespace gets it.
func TestAProfileBoundToNamespacesRefusesOthers(t *testing.T) {
	n, cfg := profileNode(t)
	text := "PROFILE_GOLD_SECURITY_GROUPS=sg-1\nPROFILE_GOLD_NAMESPACES=team-a, team-b\n"
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	gold := n.annotated(cfg, map[string]string{"vpc-cni.io/profile": "gold"})
	inNamespace := func(id, ns string) *skel.CmdArgs {
		a := n.args(id, gold)
		a.Args = "IgnoreUnknown=1;K8S_POD_NAMESPACE=" + ns + ";K8S_POD_NAME=" + id
		return a
	}
	for ns, want := range map[string]string{
		"other": "vpc-cni.io/profile=gold: profile gold is not for pods of namespace other (PROFILE_GOLD_NAMESPACES, file ",
		"":      "profile gold is not for pods of namespace (none: no K8S_POD_NAMESPACE in CNI_ARGS)",
	} {
		out, err := n.run("ADD", inNamespace("o1", ns))
		wantCode(t, err, types.ErrInvalidNetworkConfig, want)
		if strings.Contains(err.Error(), "team-") {
			t.Errorf("the refusal names the namespaces gold is bound to: %v", err)
		}
		if out != "" || len(n.host.pods) != 0 || n.state("100.64.1.10") != pool.Free {
			t.Fatalf("the refused ADD changed state: printed %q, pods %v", out, n.host.pods)
		}
	}
	out, err := n.run("ADD", inNamespace("a1", "team-b"))
	if err != nil {
		t.Fatal(err)
	}
	if ip := resultIP(t, out); ip.String() != "100.64.1.10" {
		t.Fatalf("team-b's gold pod got %s, want gold's 100.64.1.10", ip)
	}
}
