package store

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"vpc-cni/pool"
)

func TestOpenCreatesDirAndFileWithPrivateModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "var", "lib", "vpc-cni")
	s, err := OpenNew(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Dir() != dir || s.Path() != filepath.Join(dir, "state.db") {
		t.Fatalf("Dir %q Path %q", s.Dir(), s.Path())
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, s.Path(): 0o600} {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := info.Mode().Perm(); got != want {
			t.Errorf("%s mode %o, want %o", path, got, want)
		}
	}
	view(t, s, func(tx *Tx) error {
		snap, err := tx.Snapshot()
		if err == nil && len(snap.ENIs) != 0 {
			t.Errorf("new store has ENIs: %+v", snap)
		}
		return err
	})
}

func TestOpenUnusableDirNamesThePath(t *testing.T) {
	file := filepath.Join(t.TempDir(), "plain-file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{filepath.Join(file, "state"), "/proc/vpc-cni-store-test/state"} {
		_, err := OpenNew(dir, Options{})
		if err == nil || !strings.Contains(err.Error(), dir) {
			t.Errorf("Open(%s) = %v, want an error naming the directory", dir, err)
		}
	}
}

func TestOpenReadOnlyDoesNotCreate(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(filepath.Join(dir, "missing"), Options{ReadOnly: true}); !errors.Is(err, ErrNotInitialized) {
		t.Fatalf("missing dir: %v", err)
	}
	if _, err := Open(dir, Options{ReadOnly: true}); !errors.Is(err, ErrNotInitialized) {
		t.Fatalf("missing file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, DBFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("read-only open created the file: %v", err)
	}
	if _, err := OpenNew(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	ro, err := Open(dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := ro.Update(func(*Tx) error { return nil }); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Update on read-only store: %v", err)
	}
	view(t, ro, func(tx *Tx) error { _, err := tx.Counters(); return err })
}

func TestViewOfDeletedFileIsNotInitialized(t *testing.T) {
	s := newStore(t)
	if err := os.Remove(s.Path()); err != nil {
		t.Fatal(err)
	}
	if err := s.View(func(*Tx) error { return nil }); !errors.Is(err, ErrNotInitialized) {
		t.Fatalf("View: %v", err)
	}
}

// writeBolt creates a raw bolt file at path, shaped by fn.
func writeBolt(t *testing.T, path string, fn func(*bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// refusedUnchanged asserts that every way in refuses the file with want,
// names it, and leaves it byte-for-byte unchanged.
func refusedUnchanged(t *testing.T, dir string, want error) {
	t.Helper()
	path := filepath.Join(dir, DBFile)
	before := fileSHA(t, path)
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want %v naming %s", what, err, want, path)
		}
	}
	_, err := OpenNew(dir, Options{})
	check("Open", err)
	_, err = Open(dir, Options{ReadOnly: true})
	check("Open read-only", err)
	// A Store opened before the file was replaced goes through the
	// read-write open and the in-transaction check.
	s := &Store{dir: dir, path: path, timeout: time.Second, id: &identity{}}
	check("Update", s.Update(func(tx *Tx) error { return tx.AddCounter("x", 1) }))
	check("View", s.View(func(*Tx) error { return nil }))
	// A lazy Store (the plugin's) skips the up-front check; the transactions refuse.
	lazy, err := Open(dir, Options{Lazy: true})
	if err != nil {
		t.Fatalf("lazy Open: %v", err)
	}
	check("lazy Update", lazy.Update(func(tx *Tx) error { return tx.AddCounter("x", 1) }))
	check("lazy View", lazy.View(func(*Tx) error { return nil }))
	if after := fileSHA(t, path); after != before {
		t.Errorf("file changed: sha256 %s -> %s", before, after)
	}
}

func TestForeignBoltFileIsRefusedAndUntouched(t *testing.T) {
	dir := t.TempDir()
	writeBolt(t, filepath.Join(dir, DBFile), func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("somebody-elses"))
		if err != nil {
			return err
		}
		return b.Put([]byte("k"), []byte("v"))
	})
	refusedUnchanged(t, dir, ErrNotVPCCNI)
}

func TestBoltFileWithoutMagicIsRefused(t *testing.T) {
	dir := t.TempDir()
	writeBolt(t, filepath.Join(dir, DBFile), func(tx *bolt.Tx) error {
		_, err := tx.CreateBucket(bMeta)
		return err
	})
	refusedUnchanged(t, dir, ErrNotVPCCNI)
}

func TestTextFileIsRefusedAndUntouched(t *testing.T) {
	for name, text := range map[string]string{
		"short": "not a database\n",
		"long":  strings.Repeat("a text file of more than a few pages\n", 1000),
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, DBFile), []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			refusedUnchanged(t, dir, ErrNotVPCCNI)
		})
	}
}

func TestNewerSchemaIsRefusedAndUntouched(t *testing.T) {
	s := newStore(t)
	update(t, s, func(tx *Tx) error { return tx.AddCounter("before", 1) })
	writeBolt(t, s.Path(), func(tx *bolt.Tx) error {
		return tx.Bucket(bMeta).Put(kSchema, []byte(strconv.Itoa(SchemaVersion+1)))
	})
	refusedUnchanged(t, s.Dir(), ErrNewerSchema)
}

func TestMigrateEmptyBoltFile(t *testing.T) {
	dir := t.TempDir()
	writeBolt(t, filepath.Join(dir, DBFile), func(*bolt.Tx) error { return nil })
	s, err := OpenNew(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	assertCurrentSchema(t, s)
}

func TestMigrateV0MetaOnly(t *testing.T) {
	dir := t.TempDir()
	writeBolt(t, filepath.Join(dir, DBFile), func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucket(bMeta)
		if err != nil {
			return err
		}
		if err := meta.Put(kMagic, magic); err != nil {
			return err
		}
		return meta.Put(kNode, []byte(`{"instanceId":"i-0kept"}`))
	})
	if _, err := Open(dir, Options{ReadOnly: true}); !errors.Is(err, ErrNotInitialized) {
		t.Fatalf("read-only open of a v0 file: %v", err)
	}
	s, err := OpenNew(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	assertCurrentSchema(t, s)
	view(t, s, func(tx *Tx) error {
		n, ok, err := tx.Node()
		if !ok || n.InstanceID != "i-0kept" {
			t.Errorf("node lost in migration: %+v %v", n, ok)
		}
		return err
	})
}

func assertCurrentSchema(t *testing.T, s *Store) {
	t.Helper()
	db, err := bolt.Open(s.Path(), 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		if v, err := schemaVersion(tx, s.Path()); err != nil || v != SchemaVersion {
			t.Errorf("schema %d %v, want %d", v, err, SchemaVersion)
		}
		for _, name := range [][]byte{bSettings, bState, bENIs, bBlocks, bAddrs, bAvail, bAssignments,
			bIntents, bCounters, bEvents, bBudget} {
			if tx.Bucket(name) == nil {
				t.Errorf("bucket %s missing", name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestUpdateIsAtomic(t *testing.T) {
	s := newStore(t)
	boom := errors.New("boom")
	err := s.Update(func(tx *Tx) error {
		if err := tx.AddCounter("c", 1); err != nil {
			return err
		}
		if err := tx.PutENI(testENI(0, true, seqBlocks("100.64.1.1", 3)...)); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update: %v", err)
	}
	view(t, s, func(tx *Tx) error {
		c, _ := tx.Counters()
		snap, err := tx.Snapshot()
		if len(c) != 0 || len(snap.ENIs) != 0 {
			t.Errorf("failed Update left %v %+v", c, snap)
		}
		return err
	})
}

func TestBusyFileTimesOut(t *testing.T) {
	s := newStore(t)
	unlock, ok, err := lockFile(filepath.Join(s.Dir(), dbLockFile), lockEX, 0, nil)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	defer unlock()
	s.timeout = 30 * time.Millisecond
	if err := s.Update(func(*Tx) error { return nil }); !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), s.Path()) {
		t.Fatalf("Update while locked: %v", err)
	}
}

func TestLockReconcile(t *testing.T) {
	s := newStore(t)
	unlock, ok, err := s.LockReconcile(false, 0)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if info, err := os.Stat(s.ReconcileLockPath()); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("lock file: %v %v", info, err)
	}
	if _, ok, err := s.LockReconcile(false, 0); ok || err != nil {
		t.Fatalf("second non-waiting lock: %v %v", ok, err)
	}
	if _, ok, err := s.LockReconcile(true, 20*time.Millisecond); ok || err != nil {
		t.Fatalf("waiting lock with timeout: %v %v", ok, err)
	}
	unlock()
	unlock2, ok, err := s.LockReconcile(true, time.Second)
	if err != nil || !ok {
		t.Fatalf("after unlock: %v %v", ok, err)
	}
	unlock2()
}

func TestMissingBucketIsAnError(t *testing.T) {
	s := newStore(t)
	writeBolt(t, s.Path(), func(tx *bolt.Tx) error { return tx.DeleteBucket(bAvail) })
	before := fileSHA(t, s.Path())
	err := s.Update(func(tx *Tx) error { _, err := tx.Take(Assignment{Key: "a/eth0"}, t0, pool.Config{}); return err })
	if !errors.Is(err, ErrInconsistent) || !strings.Contains(err.Error(), s.Path()) {
		t.Fatalf("Update: %v", err)
	}
	if _, err := OpenNew(s.Dir(), Options{}); !errors.Is(err, ErrInconsistent) {
		t.Fatalf("Open: %v", err)
	}
	if fileSHA(t, s.Path()) != before {
		t.Fatal("file changed")
	}
}
