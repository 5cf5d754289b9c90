package doctor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The kubelet promising more pods than the addresses hold fails, naming
// both numbers and the fix; fewer is information; no config is not checked.
func TestKubeletMaxPodsFinding(t *testing.T) {
	dir := t.TempDir()
	k := Kubelet{Config: filepath.Join(dir, "config.yaml"), DropInDir: filepath.Join(dir, "conf.d")}
	if f := kubeletFinding(11, k); !f.OK || !strings.Contains(f.Detail, "not checked") {
		t.Errorf("no config: %+v", f)
	}
	cases := []struct {
		config string
		ok     bool
		says   []string
	}{
		{"kind: KubeletConfiguration\n", false, []string{"maxPods is 110 (the kubelet's default)", "hold 11 pods", "set maxPods to 11"}},
		{"kind: KubeletConfiguration\nmaxPods: 29\n", false, []string{"29", "config.yaml", "ContainerCreating"}},
		{"kind: KubeletConfiguration\nmaxPods: 11\n", true, []string{"what the node holds"}},
		{"kind: KubeletConfiguration\nmaxPods: 8\n", true, []string{"could hold 11"}},
	}
	for _, tc := range cases {
		if err := os.WriteFile(k.Config, []byte(tc.config), 0o644); err != nil {
			t.Fatal(err)
		}
		f := kubeletFinding(11, k)
		if f.OK != tc.ok {
			t.Errorf("%q: %+v, want ok %v", tc.config, f, tc.ok)
		}
		for _, s := range tc.says {
			if !strings.Contains(f.Detail, s) {
				t.Errorf("%q: %q lacks %q", tc.config, f.Detail, s)
			}
		}
	}
}
