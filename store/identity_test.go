package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func wantNoFile(t *testing.T, s *Store) {
	t.Helper()
	if _, err := os.Lstat(s.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s exists (%v); nothing but Create may make it", s.Path(), err)
	}
}

// Only Create makes the file, and only under the reconcile lock: Open, a
// lazy Open and every Update leave a missing file missing.
func TestOnlyCreateMakesTheFile(t *testing.T) {
	dir := t.TempDir()
	for _, opts := range []Options{{}, {Lazy: true}} {
		s, err := Open(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Update(func(tx *Tx) error { return tx.AddCounter("x", 1) }); !errors.Is(err, ErrNotInitialized) {
			t.Fatalf("Update on no file (%+v): %v, want ErrNotInitialized", opts, err)
		}
		wantNoFile(t, s)
		if err := s.Create(func(*Tx) error { return nil }); !errors.Is(err, ErrNotLocked) {
			t.Fatalf("Create without the reconcile lock: %v, want ErrNotLocked", err)
		}
		wantNoFile(t, s)
	}
	s, _ := Open(dir, Options{})
	unlock, held, err := s.LockReconcile(false, 0)
	if err != nil || !held {
		t.Fatal(held, err)
	}
	if err := s.Create(func(tx *Tx) error { return tx.AddCounter("x", 1) }); err != nil {
		t.Fatal(err)
	}
	unlock()
	if err := s.Update(func(tx *Tx) error { return tx.AddCounter("x", 1) }); err != nil {
		t.Fatalf("Update on the created file: %v", err)
	}
	if err := s.Create(func(*Tx) error { return nil }); !errors.Is(err, ErrNotLocked) {
		t.Fatalf("Create after unlock: %v, want ErrNotLocked", err)
	}
}

// A Store that used a file never writes into its successor: removed, a
// write fails and creates nothing; replaced, it fails with ErrReplaced.
func TestAStoreNeverWritesIntoAnotherFile(t *testing.T) {
	s := newStore(t)
	update(t, s, func(tx *Tx) error { return tx.AddCounter("x", 1) })
	if err := os.Remove(s.Path()); err != nil {
		t.Fatal(err)
	}
	err := s.Update(func(tx *Tx) error { return tx.AddCounter("x", 1) })
	if !errors.Is(err, ErrNotInitialized) || !errors.Is(err, ErrReplaced) {
		t.Fatalf("Update after the file was removed: %v, want ErrNotInitialized and ErrReplaced", err)
	}
	wantNoFile(t, s)
	other, err := OpenNew(s.Dir(), Options{}) // a rebuild's new file
	if err != nil {
		t.Fatal(err)
	}
	for name, run := range map[string]func(func(*Tx) error) error{"View": s.View, "Update": s.Update} {
		if err := run(func(*Tx) error { return nil }); !errors.Is(err, ErrReplaced) {
			t.Errorf("%s on the replaced file: %v, want ErrReplaced", name, err)
		}
	}
	update(t, other, func(tx *Tx) error { return tx.AddCounter("x", 1) })
}

// A file removed while a transaction runs: its writes went to the unlinked
// inode, and the caller hears so instead of a success.
func TestAFileRemovedDuringATransactionFailsIt(t *testing.T) {
	s := newStore(t)
	err := s.Update(func(tx *Tx) error {
		if err := os.Rename(s.Path(), filepath.Join(s.Dir(), "aside.db")); err != nil {
			t.Fatal(err)
		}
		return tx.AddCounter("x", 1)
	})
	if !errors.Is(err, ErrReplaced) {
		t.Fatalf("Update whose file went: %v, want ErrReplaced", err)
	}
	wantNoFile(t, s)
}

// A file emptied under a writer that still had it open can keep one page of
// the writer's: it is damaged (state rebuild repairs it), not foreign.
func TestAFileSmallerThanTwoPagesIsDamaged(t *testing.T) {
	s := newStore(t)
	if err := os.Truncate(s.Path(), 4096); err != nil {
		t.Fatal(err)
	}
	if err := s.View(func(*Tx) error { return nil }); !errors.Is(err, ErrDamaged) {
		t.Fatalf("View of a 4096-byte file: %v, want ErrDamaged", err)
	}
}
