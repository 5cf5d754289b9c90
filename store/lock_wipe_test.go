package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The reconcile lock outlives a wiped state dir: a pass still running under
// the removed directory's lock keeps the next one, on the directory made
// anew, out; reconcile.lock is still taken inside the directory.
func TestTheReconcileLockOutlivesAWipedStateDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vpc-cni")
	old, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	unlock, ok, err := old.LockReconcile(false, 0)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if want := dir + ".reconcile.lock"; old.OuterLockPath() != want {
		t.Fatalf("outer lock %s, want %s", old.OuterLockPath(), want)
	}
	for _, p := range []string{old.OuterLockPath(), old.ReconcileLockPath()} {
		if info, err := os.Stat(p); err != nil || info.Mode().Perm() != 0o600 {
			t.Fatalf("lock file %s: %v %v", p, info, err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	wiped, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := wiped.LockReconcile(false, 0); ok || err != nil {
		t.Fatalf("the lock on a wiped state dir while the old pass holds it: taken %v, %v", ok, err)
	}
	unlock()
	again, ok, err := wiped.LockReconcile(false, 0)
	if err != nil || !ok {
		t.Fatalf("once the old pass let go: %v %v", ok, err)
	}
	again()
}

// A lock file beside the state dir that others could hold (another owner,
// or a mode that lets them open it) is refused with an error naming it.
func TestTheOuterReconcileLockRefusesAFileOthersCouldHold(t *testing.T) {
	s := newStore(t)
	if err := os.WriteFile(s.OuterLockPath(), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(s.OuterLockPath(), 0o644); err != nil {
		t.Fatal(err)
	}
	_, ok, err := s.LockReconcile(false, 0)
	if ok || err == nil || !strings.Contains(err.Error(), s.OuterLockPath()) || !strings.Contains(err.Error(), "mode 644") {
		t.Fatalf("a 0644 outer lock file: taken %v, %v", ok, err)
	}
}
