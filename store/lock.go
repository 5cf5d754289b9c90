package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

const (
	lockSH = unix.LOCK_SH
	lockEX = unix.LOCK_EX
)

// LockReconcile takes the exclusive reconcile lock, so reconcilers take
// turns: first the lock beside the state directory (OuterLockPath), which
// outlives a wiped directory, then reconcile.lock inside it, which a binary
// that knows only that one takes. Without wait it tries once; with wait it
// waits up to timeout for each (timeout <= 0: as long as it takes).
// acquired is false, with a nil error, when another process holds either;
// unlock releases both.
func (s *Store) LockReconcile(wait bool, timeout time.Duration) (unlock func(), acquired bool, err error) {
	if !wait {
		timeout = 0
	} else if timeout <= 0 {
		timeout = -1
	}
	outer, acquired, err := lockOwnFile(s.OuterLockPath(), timeout, s.reconcileHooks(timeout))
	if !acquired || err != nil {
		return outer, acquired, err
	}
	inner, acquired, err := lockFile(s.ReconcileLockPath(), lockEX, timeout, s.reconcileHooks(timeout))
	if !acquired || err != nil {
		outer()
		return inner, acquired, err
	}
	s.id.setLocked(true) // Create may make the file
	return func() { s.id.setLocked(false); inner(); outer() }, true, nil
}

// OuterLockPath is the reconcile lock beside the state directory,
// <parent>/<dir name>.reconcile.lock (/var/lib/vpc-cni.reconcile.lock): a
// pass still running under a removed directory's reconcile.lock holds it,
// so the next pass, on a directory made anew, waits for that one instead
// of sweeping the ENI it is creating.
func (s *Store) OuterLockPath() string { return OuterLockPath(s.dir) }

// OuterLockPath is the reconcile lock beside state directory dir.
func OuterLockPath(dir string) string {
	dir = filepath.Clean(dir)
	return filepath.Join(filepath.Dir(dir), filepath.Base(dir)+"."+ReconcileLockFile)
}

// lockOwnFile flocks path exclusively, as lockFile does, and refuses a file
// another user owns or may open: in a directory others may write, they
// could have made it to hold the lock against every pass.
func lockOwnFile(path string, timeout time.Duration, hooks *lockHooks) (func(), bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if errors.Is(err, unix.EROFS) || errors.Is(err, os.ErrNotExist) {
		// The state dir's parent is not this process's to write: the
		// DaemonSet's containers mount the state dir alone on a read-only
		// root. reconcile.lock, which every process shares, still orders
		// the passes; the sweep's age rule covers a wiped dir there.
		return func() {}, true, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("lock file %s: %w", path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, false, fmt.Errorf("lock file %s: %w", path, err)
	}
	if uid := os.Geteuid(); int(st.Uid) != uid || st.Mode&0o077 != 0 {
		f.Close()
		return nil, false, fmt.Errorf("lock file %s: owned by uid %d with mode %o, want uid %d and mode 600: remove it",
			path, st.Uid, st.Mode&0o777, uid)
	}
	return flocked(f, path, lockEX, timeout, hooks)
}

// lockDB takes state.db.lock, shared for readers and exclusive for writers,
// waiting up to the store's timeout. A read-only store never creates the
// lock file, and goes on without it when it cannot open it: bbolt's own lock
// still protects the file.
func (s *Store) lockDB(write bool) (func(), error) {
	how := lockSH
	if write {
		how = lockEX
	}
	path := filepath.Join(s.dir, dbLockFile)
	var unlock func()
	var ok bool
	var err error
	if s.readOnly {
		unlock, ok, err = lockExisting(path, how, s.timeout)
	} else {
		unlock, ok, err = lockFile(path, how, s.timeout, nil)
	}
	if err != nil && !write {
		return func() {}, nil
	}
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%s: %w: locked by another process for more than %s", s.path, ErrBusy, s.timeout)
	}
	return unlock, nil
}

// lockExisting flocks path if it exists, opened read-only; it creates nothing.
func lockExisting(path string, how int, timeout time.Duration) (func(), bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false, fmt.Errorf("lock file %s: %w", path, err)
	}
	return flocked(f, path, how, timeout, nil)
}

// lockFile flocks path (created 0600 if missing). timeout 0 tries once;
// timeout < 0 blocks; otherwise it blocks in the kernel's queue, which wakes
// a waiter as soon as the holder unlocks (bbolt's own lock polls every
// 50 ms, which under contention gives long, unfair waits).
func lockFile(path string, how int, timeout time.Duration, hooks *lockHooks) (func(), bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if errors.Is(err, os.ErrPermission) && how == lockSH {
		f, err = os.Open(path)
	}
	if err != nil {
		return nil, false, fmt.Errorf("lock file %s: %w", path, err)
	}
	return flocked(f, path, how, timeout, hooks)
}

func flocked(f *os.File, path string, how int, timeout time.Duration, hooks *lockHooks) (func(), bool, error) {
	ok, err := flockWait(f, how, timeout, hooks.waitingOn(path))
	if err != nil {
		err = fmt.Errorf("lock file %s: %w", path, err)
	}
	if !ok {
		return nil, false, err
	}
	hooks.markHeld(f)
	unlock := func() {
		hooks.clearHeld(f)
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	}
	return unlock, true, nil
}

// flockWait locks f, or closes it when it does not get the lock. waiting
// (may be nil) is told before it blocks, and its result when the wait ends.
func flockWait(f *os.File, how int, timeout time.Duration, waiting func(*os.File) func(bool)) (bool, error) {
	fd := int(f.Fd())
	err := ignoringEINTR(func() error { return unix.Flock(fd, how|unix.LOCK_NB) })
	if err == nil {
		return true, nil
	}
	if !errors.Is(err, unix.EWOULDBLOCK) || timeout == 0 {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			err = nil
		}
		return false, err
	}
	ended := func(bool) {}
	if waiting != nil {
		ended = waiting(f)
	}
	ok, err := flockBlock(f, how, timeout)
	ended(ok)
	return ok, err
}

// flockBlock waits for the lock up to timeout (< 0: no limit).
func flockBlock(f *os.File, how int, timeout time.Duration) (bool, error) {
	fd := int(f.Fd())
	done := make(chan error, 1)
	go func() { done <- ignoringEINTR(func() error { return unix.Flock(fd, how) }) }()
	var expired <-chan time.Time
	if timeout > 0 {
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		expired = timer.C
	}
	select {
	case err := <-done:
		if err != nil {
			f.Close()
		}
		return err == nil, err
	case <-expired:
		// The blocked flock cannot be cancelled: let it finish, then let go.
		go func() {
			<-done
			f.Close() // closing the file releases the lock if it was taken
		}()
		return false, nil
	}
}

func ignoringEINTR(fn func() error) error {
	for {
		if err := fn(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
