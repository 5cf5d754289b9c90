package store

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// The state file is created only by Create, which needs the reconcile lock:
// a reconcile pass on a fresh node (after it found no running pod's wiring),
// a rebuild or a migrate. Every other write on a missing file fails with
// ErrNotInitialized, and the caller falls into the lost-state path instead
// of recreating the file with every address free.
//
// A file also carries a random generation, written when it is created. A
// Store pins the generation its first transaction saw; a later transaction
// on another generation (the file replaced by a rebuild, or removed and
// created again) fails with ErrReplaced, and so does one whose file was
// removed while it ran (its writes went to an unlinked inode). A process
// that read the pool from one file never writes what it planned into
// another.

var (
	ErrReplaced  = errors.New("state file removed or replaced while in use")
	ErrNotLocked = errors.New("creating the state file needs the reconcile lock")
)

var kGeneration = []byte("generation")

// identity is what a Store pins and whether it holds the reconcile lock.
type identity struct {
	mu     sync.Mutex
	pin    []byte // nil until the first transaction; empty for a file from before generations
	locked bool
}

func (id *identity) setLocked(on bool) {
	id.mu.Lock()
	id.locked = on
	id.mu.Unlock()
}

func (id *identity) holdsLock() bool {
	id.mu.Lock()
	defer id.mu.Unlock()
	return id.locked
}

func (id *identity) pinned() []byte {
	id.mu.Lock()
	defer id.mu.Unlock()
	return id.pin
}

// check compares the file's generation with the pin; a creating transaction
// adopts the file's generation instead.
func (id *identity) check(gen []byte, create bool, path string) error {
	id.mu.Lock()
	defer id.mu.Unlock()
	if id.pin != nil && !create && !bytes.Equal(id.pin, gen) {
		return fmt.Errorf("%s: %w: generation %x, this process started on %x; its work is not written", path, ErrReplaced, gen, id.pin)
	}
	return nil
}

// adopt pins gen after a transaction that succeeded.
func (id *identity) adopt(gen []byte, create bool) {
	id.mu.Lock()
	defer id.mu.Unlock()
	if id.pin == nil || create {
		id.pin = append([]byte{}, gen...)
	}
}

// generation reads the file's generation; a write gives a file without one
// (created before generations, or by a creating transaction) a new one.
func generation(tx *bolt.Tx, write bool) ([]byte, error) {
	meta := tx.Bucket(bMeta)
	if meta == nil {
		return []byte{}, nil
	}
	if gen := meta.Get(kGeneration); gen != nil || !write {
		return append([]byte{}, gen...), nil
	}
	gen := make([]byte, 16)
	if _, err := rand.Read(gen); err != nil {
		return nil, err
	}
	return gen, meta.Put(kGeneration, gen)
}

// missing is the error of a transaction on a missing or empty file.
func (s *Store) missing() error {
	if s.id.pinned() != nil {
		return fmt.Errorf("%s: %w (%w)", s.path, ErrNotInitialized, ErrReplaced)
	}
	return fmt.Errorf("%s: %w", s.path, ErrNotInitialized)
}

// stillThere fails when the path no longer names the file the transaction
// opened: it was removed or replaced while the transaction ran.
func (s *Store) stillThere(opened *os.File) error {
	if opened == nil {
		return nil
	}
	a, err := opened.Stat()
	if err != nil {
		return err
	}
	b, err := os.Lstat(s.path)
	if err != nil || !os.SameFile(a, b) {
		return fmt.Errorf("%s: %w: the file was removed or replaced during the transaction", s.path, ErrReplaced)
	}
	return nil
}

// Create runs fn in a write transaction that creates the state file when it
// is missing: the one way a file comes to be. The caller holds the reconcile
// lock through this Store (LockReconcile) and has made sure no running pod
// needs the state a new file would not hold (rebuild.Recover, the pass's
// fresh-node check). The Store pins the file it created.
func (s *Store) Create(fn func(*Tx) error) error {
	if s.readOnly {
		return fmt.Errorf("%s: %w", s.path, ErrReadOnly)
	}
	if !s.id.holdsLock() {
		return fmt.Errorf("%s: %w", s.path, ErrNotLocked)
	}
	return s.runTx(true, true, fn)
}

// OpenNew opens dir and creates its state file under the reconcile lock:
// for the what-if simulator and tests, whose nodes run no pods of a lost
// state. A node's own paths create through Create after their lost-state
// check.
func OpenNew(dir string, opts Options) (*Store, error) {
	s, err := Open(dir, opts)
	if err != nil {
		return nil, err
	}
	unlock, held, err := s.LockReconcile(true, s.timeout)
	if err != nil || !held {
		return nil, fmt.Errorf("%s: taking the reconcile lock to create the state file: %w", s.path, cmpErr(err, ErrBusy))
	}
	defer unlock()
	return s, s.Create(func(*Tx) error { return nil })
}

func cmpErr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

// MoveAside renames the state file to to (mode 0600) and lets go of its
// generation: the caller, holding the reconcile lock through this Store,
// set the file aside on purpose, and its next Create makes the new one.
// Other processes inside the old file fail their writes (ErrReplaced).
func (s *Store) MoveAside(to string) error {
	if !s.id.holdsLock() {
		return fmt.Errorf("%s: %w", s.path, ErrNotLocked)
	}
	if err := os.Rename(s.path, to); err != nil {
		return err
	}
	if err := os.Chmod(to, 0o600); err != nil {
		return err
	}
	s.id.mu.Lock()
	s.id.pin = nil
	s.id.mu.Unlock()
	return nil
}
