package reconcile

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestShippedBinaryHasNoCrashHook builds the binary as the Makefile ships it
// and checks that the crash tests' variable is not in it: a node whose
// environment carried it must not have every pass kill itself.
func TestShippedBinaryHasNoCrashHook(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on this machine")
	}
	dir := t.TempDir()
	cmd := exec.Command("make", "-C", "..", "build", "BIN="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	bin, err := os.ReadFile(filepath.Join(dir, "vpcctl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(bin) < 1<<20 {
		t.Fatalf("%s is %d bytes: not the binary", filepath.Join(dir, "vpcctl"), len(bin))
	}
	if bytes.Contains(bin, []byte(envCrashAt)) {
		t.Fatalf("the shipped binary contains %q: the crash hook is reachable in production", envCrashAt)
	}
}
