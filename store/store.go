// Package store keeps the node's whole state in one bbolt file that many
// short-lived processes share: the CNI plugin (one process per pod), the
// reconciler and the CLI. Every operation opens the file, runs one
// transaction and closes it again, so no process ever holds the database
// across a slow call.
//
// Files in the state directory (0700):
//
//	state.db        the bbolt database (0600)
//	state.db.lock   flocked around every open of state.db: shared by readers,
//	                exclusive by writers; waiters queue in the kernel
//	reconcile.lock  LockReconcile's lock; reconcilers take turns
//
// Never call View, Update or LockReconcile from inside a View or Update
// callback: the outer transaction holds the lock the inner one waits for.
// A nested View or Update on the same file fails at once with ErrNested.
//
// Layout (schema.go): per-address keys in "addrs", and an "avail" index keyed
// by (device index, address) holding exactly the addresses Take may hand out,
// so Take's choice is the first entry whose cooldown has passed and its cost
// does not grow with the pool. A file that is not a vpc-cni database, or of
// a newer schema, is refused before anything writes to it.
package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Paths inside the state directory. **contract**
const (
	DefaultDir        = "/var/lib/vpc-cni"
	DBFile            = "state.db"
	ReconcileLockFile = "reconcile.lock"
	// dbLockFile serialises opens of DBFile; waiters queue in the kernel
	// instead of bbolt's own 50 ms lock polling.
	dbLockFile = "state.db.lock"

	DefaultTimeout = 5 * time.Second
)

var (
	ErrNotVPCCNI      = errors.New("not a vpc-cni state database")
	ErrNewerSchema    = errors.New("state database has a newer schema than this binary understands")
	ErrOlderSchema    = errors.New("state database has an older schema; open it read-write once to migrate it")
	ErrNotInitialized = errors.New("state database not initialized")
	ErrBusy           = errors.New("state database busy")
	ErrReadOnly       = errors.New("store opened read-only")
	ErrNoFreeAddress  = errors.New("no free address in the pool")
	ErrNotFound       = errors.New("not found")
	ErrExists         = errors.New("already exists")
	ErrAssigned       = errors.New("address is assigned to a pod")
	ErrInvalid        = errors.New("invalid value")
	ErrInconsistent   = errors.New("state database inconsistent")
	ErrNested         = errors.New("nested transaction")
)

// Options tune how the store opens its file.
type Options struct {
	Timeout  time.Duration // how long to wait for the file lock; 0 means DefaultTimeout
	ReadOnly bool          // never create, migrate or write the file
	// Lazy skips the up-front check of the file (one extra open). Every
	// transaction still validates the file before it reads or writes, and a
	// write transaction creates or migrates it: the plugin, which makes one
	// transaction per invocation, saves an open.
	Lazy bool
	// HoldFile keeps the file of the last write transaction open, for
	// Unchanged (held.go); Close lets go of it.
	HoldFile bool
	// OnLockWait, when set, is told when LockReconcile has to wait for a
	// lock file (which, held by whom, until when); the func it returns (may
	// be nil) is told whether the lock came.
	OnLockWait func(LockWait) func(got bool)
}

// Store names a state file. It holds no open file between operations.
type Store struct {
	dir      string
	path     string
	timeout  time.Duration
	readOnly bool
	id       *identity // the file's generation this Store pinned, and the reconcile lock (identity.go)
	hold     bool      // Options.HoldFile
	// onLockWait is Options.OnLockWait.
	onLockWait func(LockWait) func(got bool)
	held       *os.File // the file of the last write, kept open (held.go)
	heldInfo   os.FileInfo
}

// benchHook is set only by the store's benchmarks (bench_test.go), to open
// the file without fsync and count the pages each transaction writes. It is
// nil in the shipped binary, where a transaction pays one nil check for it.
var benchHook interface {
	opening(*bolt.Options)
	closing(*bolt.DB)
}

// Open checks (or creates, mode 0700) the state directory and makes sure the
// state file, if there is one, is a vpc-cni database of a schema this binary
// knows, migrating it unless opts.ReadOnly. It never creates the file (only
// Create does) and does not keep it open.
func Open(dir string, opts Options) (*Store, error) {
	if dir == "" {
		dir = DefaultDir
	}
	s := &Store{dir: dir, path: filepath.Join(dir, DBFile), timeout: opts.Timeout, readOnly: opts.ReadOnly, id: &identity{}, hold: opts.HoldFile,
		onLockWait: opts.OnLockWait}
	if s.timeout <= 0 {
		s.timeout = DefaultTimeout
	}
	if err := s.prepareDir(); err != nil {
		return nil, err
	}
	if opts.Lazy && !opts.ReadOnly {
		return s, nil
	}
	version, err := s.peekVersion()
	if err != nil {
		return nil, err
	}
	if version == SchemaVersion {
		return s, nil
	}
	if version == 0 && !s.readOnly {
		return s, nil // no file: Create makes it
	}
	if s.readOnly {
		if version == 0 {
			return nil, fmt.Errorf("%s: %w", s.path, ErrNotInitialized)
		}
		return nil, fmt.Errorf("%s: schema %d, this binary uses %d: %w", s.path, version, SchemaVersion, ErrOlderSchema)
	}
	// Migrate: the write transaction runs the migrations.
	if err := s.Update(func(*Tx) error { return nil }); err != nil {
		return nil, err
	}
	return s, nil
}

// ReadOnly reports whether the store was opened read-only.
func (s *Store) ReadOnly() bool { return s.readOnly }

// Dir is the state directory.
func (s *Store) Dir() string { return s.dir }

// Path is the state file.
func (s *Store) Path() string { return s.path }

// ReconcileLockPath is the file LockReconcile locks.
func (s *Store) ReconcileLockPath() string { return filepath.Join(s.dir, ReconcileLockFile) }

// View runs fn in one read-only transaction.
func (s *Store) View(fn func(*Tx) error) error { return s.run(false, fn) }

// Update runs fn in one read-write transaction: all of fn's writes are
// committed (and fsynced) together, or none if fn returns an error.
func (s *Store) Update(fn func(*Tx) error) error {
	if s.readOnly {
		return fmt.Errorf("%s: %w", s.path, ErrReadOnly)
	}
	return s.run(true, fn)
}

// peekVersion reads the schema version through a read-only open, so a
// foreign or newer file is rejected before anything opens it for writing.
// A missing or empty file is version 0.
func (s *Store) peekVersion() (int, error) {
	if exists, err := s.fileExists(); err != nil || !exists {
		return 0, err
	}
	version := 0
	err := s.withDB(false, false, false, func(db *bolt.DB, size int64) error {
		return db.View(func(btx *bolt.Tx) error {
			if err := checkSize(btx, s.path, size); err != nil {
				return err
			}
			var err error
			version, err = schemaVersion(btx, s.path)
			return err
		})
	})
	return version, err
}

// fileExists reports whether the state file exists with content.
func (s *Store) fileExists() (bool, error) {
	info, err := os.Lstat(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("state database %s: %w", s.path, err)
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		return false, symlinkError(s.path)
	}
	if !info.Mode().IsRegular() {
		return false, fmt.Errorf("state database %s: not a regular file: %w", s.path, ErrNotVPCCNI)
	}
	return info.Size() > 0, nil
}

func (s *Store) run(write bool, fn func(*Tx) error) error { return s.runTx(write, false, fn) }

// runTx runs fn in one transaction on the file this Store pinned; only
// create may make a missing file.
func (s *Store) runTx(write, create bool, fn func(*Tx) error) error {
	if !create {
		if exists, err := s.fileExists(); err != nil {
			return err
		} else if !exists {
			return s.missing()
		}
	}
	var gen []byte
	err := s.withDB(write, false, create, func(db *bolt.DB, size int64) error {
		do, check := db.View, checkReadable
		if write {
			do, check = db.Update, prepareWrite
		}
		return do(func(btx *bolt.Tx) error {
			if err := checkSize(btx, s.path, size); err != nil {
				return err
			}
			if write && !create {
				if v, err := schemaVersion(btx, s.path); err == nil && v == 0 {
					return s.missing() // an empty bolt file: not created by Create
				}
			}
			if err := check(btx, s.path); err != nil {
				return err
			}
			var err error
			if gen, err = generation(btx, write); err != nil {
				return err
			}
			if err := s.id.check(gen, create, s.path); err != nil {
				return err
			}
			return fn(&Tx{tx: btx, path: s.path})
		})
	})
	if err == nil {
		s.id.adopt(gen, create)
	}
	return err
}

// withDB locks, opens, runs fn and closes: the database is open only for fn,
// which gets the file's size as it was opened. A panic or memory fault
// while the file is open (a damaged file) becomes an ErrDamaged error.
// preload reads the free page list on open, which a read-only open
// otherwise leaves for later.
func (s *Store) withDB(write, preload, create bool, fn func(db *bolt.DB, size int64) error) (err error) {
	leave, err := enterTx(s.path)
	if err != nil {
		return err
	}
	defer leave()
	unlock, err := s.lockDB(write)
	if err != nil {
		return err
	}
	defer unlock()
	defer guardFaults()()
	var (
		db   *bolt.DB
		file *os.File // as bbolt opened it, to let go of a damaged file
		size int64
	)
	defer func() {
		if r := recover(); r != nil {
			// bbolt may have panicked holding its own locks (db.Close could
			// hang) or inside Open (there is no db to close).
			recoverDamage(s.path, &err, r)
			letGo(file)
			return
		}
		s.closeDB(db, &err)
	}()
	opts := &bolt.Options{Timeout: s.timeout, ReadOnly: !write, PreLoadFreelist: preload, OpenFile: s.openFile(&file, &size, create)}
	if benchHook != nil {
		benchHook.opening(opts)
	}
	db, err = bolt.Open(s.path, 0o600, opts)
	if err != nil {
		return s.openError(err)
	}
	if err := fn(db, size); err != nil {
		return err
	}
	if err := s.stillThere(file); err != nil || !write || !s.hold || file == nil {
		return err
	}
	return s.holdFile(file)
}

// closeDB closes db if it was opened; an error closing it is returned only
// when nothing failed before.
func (s *Store) closeDB(db *bolt.DB, err *error) {
	if db == nil {
		return
	}
	if benchHook != nil {
		benchHook.closing(db)
	}
	if cerr := db.Close(); cerr != nil && *err == nil {
		*err = fmt.Errorf("closing %s: %w", s.path, cerr)
	}
}

// tooSmall reports a bbolt file cut below two pages: it starts with a
// bbolt meta page (the writer's, landed in a file emptied under it), and no
// database is that small. A short file of anything else is not ours.
func tooSmall(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || info.Size() == 0 || info.Size() >= 2*int64(os.Getpagesize()) {
		return false
	}
	head := make([]byte, 20)
	if _, err := io.ReadFull(f, head); err != nil {
		return false
	}
	return binary.LittleEndian.Uint32(head[16:]) == boltMagic
}

// boltMagic starts a bbolt meta page's body, after its 16-byte page header.
const boltMagic = 0xED0CDAED

func (s *Store) openError(err error) error {
	switch {
	case errors.Is(err, ErrUnsafe):
		return err
	case tooSmall(s.path):
		// Emptied under a writer that still had it open: the writer's
		// pages landed in the empty file. Not a database of anyone's.
		return damaged(s.path, "smaller than bbolt's two meta pages (%v)", err)
	case (errors.Is(err, berrors.ErrInvalid) || errors.Is(err, berrors.ErrChecksum) ||
		errors.Is(err, berrors.ErrInvalidMapping)) && holdsMagic(s.path):
		return damaged(s.path, "bbolt cannot read either meta page (%v), but its data pages hold vpc-cni's state", err)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrVersionMismatch),
		errors.Is(err, berrors.ErrChecksum), errors.Is(err, berrors.ErrInvalidMapping):
		return fmt.Errorf("%s: %w (%v); the file was left unchanged", s.path, ErrNotVPCCNI, err)
	case errors.Is(err, berrors.ErrTimeout):
		return fmt.Errorf("%s: %w: locked by another process for more than %s", s.path, ErrBusy, s.timeout)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: %w", s.path, ErrNotInitialized)
	}
	return fmt.Errorf("state database %s: %w", s.path, err)
}
