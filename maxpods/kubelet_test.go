package maxpods

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The kubelet's maxPods as it would start: the config file, then the *.conf
// drop-ins in name order, the last that sets it winning; JSON (nodeadm) or
// YAML; the kubelet's default 110 when nothing sets it.
func TestReadKubelet(t *testing.T) {
	dir := t.TempDir()
	config, dropIns := filepath.Join(dir, "config.yaml"), filepath.Join(dir, "conf.d")
	if _, found, err := ReadKubelet(config, dropIns); found || err != nil {
		t.Fatalf("no config file: found %v, %v", found, err)
	}
	write(t, config, "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nevictionHard:\n  maxPods: 7\n")
	check := func(want int, from string) {
		t.Helper()
		s, found, err := ReadKubelet(config, dropIns)
		if err != nil || !found || s.MaxPods != want || !strings.HasSuffix(s.From, from) {
			t.Fatalf("got %+v %v %v, want %d from %s", s, found, err, want, from)
		}
	}
	check(110, "the kubelet's default") // an indented maxPods is not the top-level key
	write(t, config, "kind: KubeletConfiguration\nmaxPods: 58 # bootstrap\n")
	check(58, "config.yaml")
	write(t, filepath.Join(dropIns, "90-other.conf"), `{"apiVersion":"kubelet.config.k8s.io/v1beta1","kind":"KubeletConfiguration","serializeImagePulls":false}`)
	write(t, filepath.Join(dropIns, "10-early.conf"), `{"kind":"KubeletConfiguration","maxPods":20}`)
	write(t, filepath.Join(dropIns, "99-ignored.yaml"), "maxPods: 1\n")
	check(20, "10-early.conf")
	write(t, filepath.Join(dropIns, DropInName), string(DropIn(29)))
	check(29, DropInName)
	write(t, filepath.Join(dropIns, "50-bad.conf"), "maxPods: many\n")
	if _, _, err := ReadKubelet(config, dropIns); err == nil || !strings.Contains(err.Error(), "50-bad.conf") {
		t.Errorf("a bad maxPods: %v", err)
	}
}

// The drop-in is rewritten only when its value changes.
func TestWriteDropIn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conf.d", DropInName)
	for i, want := range []bool{true, false} {
		if changed, err := WriteDropIn(path, 29); err != nil || changed != want {
			t.Fatalf("write %d: changed %v, %v", i, changed, err)
		}
	}
	if changed, _ := WriteDropIn(path, 30); !changed {
		t.Error("a new value was not written")
	}
	if n, ok, err := parseMaxPods(DropIn(30)); n != 30 || !ok || err != nil {
		t.Errorf("the drop-in reads back as %d %v %v", n, ok, err)
	}
}
