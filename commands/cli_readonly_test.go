package commands

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// readOnlyCommands only look at the state: they must create and write nothing.
var readOnlyCommands = [][]string{
	{"pool", "status"}, {"pool", "status", "-o", "json"}, {"doctor"}, {"events"}, {"metrics"},
	{"gc", "--dry-run"}, {"reconcile", "--dry-run"}, {"node-rules", "status"},
}

// dirPrint is every entry of dir with its mode, mtime and content hash.
func dirPrint(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		line := fmt.Sprintf("%s %v %d", path, info.Mode(), info.ModTime().UnixNano())
		if info.Mode().IsRegular() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(" %x", sha256.Sum256(b))
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// On a state dir made read-only (0500, state.db 0400), the read-only
// commands work and change nothing: no file or directory appears, no mtime
// or byte changes. (Root ignores the modes, so the test compares instead.)
func TestReadOnlyCommandsWriteNothing(t *testing.T) {
	_, env := newSim(t, "m5.large")
	dir := filepath.Join(t.TempDir(), "state")
	vpc(t, env, "--state-dir", dir, "reconcile").want(t, 0)
	if err := os.Chmod(filepath.Join(dir, "state.db"), 0o400); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(dir, 0o700) }) // before TempDir's removal, which only root does through 0500
	before := dirPrint(t, dir)
	for _, args := range readOnlyCommands {
		r := vpc(t, env, append([]string{"--state-dir", dir}, args...)...)
		// doctor and node-rules status may find the host's wiring lacking (no link with the sim's MACs)
		if r.code != 0 && !((args[0] == "doctor" || args[0] == "node-rules") && r.code == 1) {
			t.Errorf("%v: exit %d\nstdout %s\nstderr %s", args, r.code, r.stdout, r.stderr)
		}
		if after := dirPrint(t, dir); after != before {
			t.Fatalf("%v changed the state dir:\nbefore\n%s\nafter\n%s", args, before, after)
		}
	}
}

// A missing state dir is an error that says what to do, and stays missing.
func TestReadOnlyCommandsOnMissingState(t *testing.T) {
	_, env := newSim(t, "m5.large")
	parent := t.TempDir()
	dir := filepath.Join(parent, "mistyped")
	for _, args := range readOnlyCommands {
		if args[0] == "reconcile" {
			continue // it plans the first pass in memory (TestReconcileDryRunOnAFreshNode)
		}
		vpc(t, env, append([]string{"--state-dir", dir}, args...)...).
			want(t, 1, "no state in "+dir+": run `vpcctl reconcile` first, or pass --state-dir")
		if entries, _ := os.ReadDir(parent); len(entries) != 0 {
			t.Fatalf("%v created %s", args, entries[0].Name())
		}
	}
	// An existing, empty dir: the same, and nothing created in it.
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, args := range readOnlyCommands {
		if args[0] == "reconcile" {
			vpc(t, env, "--state-dir", dir, "reconcile", "--dry-run").want(t, 0, "no state in this state dir yet")
			continue
		}
		vpc(t, env, append([]string{"--state-dir", dir}, args...)...).want(t, 1, "no state in "+dir)
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Fatalf("%v created %s", args, entries[0].Name())
		}
	}
}
