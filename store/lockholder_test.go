package store

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A holder of the reconcile lock writes who it is into both files and
// empties them before it lets go; a second store that has to wait is told
// at once which file, by whom, until when, and then that the lock came.
func TestReconcileLockWaitSaysWhoHoldsIt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vpc-cni")
	holder, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	unlock, ok, err := holder.LockReconcile(false, 0)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	want := fmt.Sprintf("pid %d since ", os.Getpid())
	for _, p := range []string{holder.OuterLockPath(), holder.ReconcileLockPath()} {
		if b, err := os.ReadFile(p); err != nil || !strings.HasPrefix(string(b), want) {
			t.Fatalf("%s says %q (%v), want %q...", p, b, err, want)
		}
	}
	waits, ended := make(chan LockWait, 2), make(chan bool, 2)
	waiter, err := Open(dir, Options{OnLockWait: func(w LockWait) func(bool) {
		waits <- w
		return func(got bool) { ended <- got }
	}})
	if err != nil {
		t.Fatal(err)
	}
	took := make(chan error, 1)
	go func() {
		un, ok, err := waiter.LockReconcile(true, time.Hour)
		if err == nil && !ok {
			err = fmt.Errorf("not taken")
		}
		if ok {
			un()
		}
		took <- err
	}()
	w := <-waits
	if w.Path != holder.OuterLockPath() || !strings.HasPrefix(w.Holder, want) || time.Until(w.Deadline) < 50*time.Minute {
		t.Errorf("told %+v", w)
	}
	unlock()
	if err := <-took; err != nil || !<-ended {
		t.Fatal(err)
	}
	for _, p := range []string{holder.OuterLockPath(), holder.ReconcileLockPath()} {
		if b, _ := os.ReadFile(p); len(b) != 0 {
			t.Errorf("%s still says %q after the holders let go", p, b)
		}
	}
}

// What a waiter repeats of the file is one line of printable text.
func TestReadHolderKeepsOnlyPrintableText(t *testing.T) {
	for content, want := range map[string]string{
		"pid 1 since x\nmore": "pid 1 since x", "pid \x1b[2J": "", "": "", strings.Repeat("a", 200): strings.Repeat("a", 96),
	} {
		f, err := os.CreateTemp(t.TempDir(), "lock")
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(content)
		if got := readHolder(f); got != want {
			t.Errorf("%q: %q, want %q", content, got, want)
		}
		f.Close()
	}
}
