package e2e

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/types"
)

// Bad input gets the spec's error JSON on stdout with the right code, a
// non-zero exit, and leaves the state file byte for byte as it was.
func TestPrivilegedBadInput(t *testing.T) {
	w := newWorld(t, worldOpts{})
	p := w.newPod("bad")
	good := w.conf(nil)
	with := func(k string, v any) []byte {
		c := w.conf(nil)
		c[k] = v
		return mustJSON(t, c)
	}
	cases := []struct {
		name  string
		env   []string
		stdin []byte
		code  uint
	}{
		{"malformed JSON", p.env("ADD"), []byte(`{"cniVersion":"1.1.0","name":`), types.ErrDecodingFailure},
		{"missing CNI_NETNS", dropEnv(p.env("ADD"), "CNI_NETNS"), mustJSON(t, good), types.ErrInvalidEnvironmentVariables},
		{"missing CNI_CONTAINERID", dropEnv(p.env("ADD"), "CNI_CONTAINERID"), mustJSON(t, good), types.ErrInvalidEnvironmentVariables},
		{"unsupported cniVersion", p.env("ADD"), with("cniVersion", "0.2.0"), types.ErrIncompatibleCNIVersion},
		{"mtu is a string", p.env("ADD"), with("mtu", "9001"), types.ErrInvalidNetworkConfig},
		{"inlineGrow is a string", p.env("ADD"), with("inlineGrow", "yes"), types.ErrInvalidNetworkConfig},
		{"stateDir is a number", p.env("ADD"), with("stateDir", 5), types.ErrInvalidNetworkConfig},
		{"timeouts.add is a list", p.env("ADD"), with("timeouts", map[string]any{"add": []int{1}}), types.ErrInvalidNetworkConfig},
		{"ipam: mtu is a string", p.env("ADD"), mustJSON(t, map[string]any{"cniVersion": "1.1.0", "name": "vpc", "type": "ptp",
			"ipam": map[string]any{"type": "vpc-cni", "stateDir": w.stateDir, "mtu": "x"}}), types.ErrInvalidNetworkConfig},
		{"netns does not exist", setEnv(p.env("ADD"), "CNI_NETNS", "/var/run/netns/vpc-cni-e2e-absent"), mustJSON(t, good), types.ErrInvalidNetNS},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := w.stateHash()
			r := w.execInNode(bin("vpc-cni"), tc.env, tc.stdin)
			if e := cniError(t, r); e.Code != tc.code {
				t.Errorf("code %d (%s), want %d", e.Code, e.Msg, tc.code)
			}
			if r.state == nil || r.state.ExitCode() == 0 {
				t.Errorf("exit status %v, want non-zero", r.state)
			}
			if w.stateHash() != before {
				t.Error("the state file changed")
			}
		})
	}
	if n := len(w.assignments()); n != 0 {
		t.Errorf("%d assignments after bad input", n)
	}
}

func (w *world) stateHash() [32]byte {
	w.tb.Helper()
	b, err := os.ReadFile(filepath.Join(w.stateDir, "state.db"))
	if err != nil {
		w.tb.Fatal(err)
	}
	return sha256.Sum256(b)
}

// dropEnv leaves key empty, which skel reads as missing (the test process
// has no CNI_* variables of its own).
func dropEnv(env []string, key string) []string { return setEnv(env, key, "") }

func setEnv(env []string, key, value string) []string {
	out := []string{key + "=" + value}
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return out
}
