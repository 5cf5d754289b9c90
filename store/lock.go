package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

const (
	lockSH = unix.LOCK_SH
	lockEX = unix.LOCK_EX
)

// LockReconcile takes the exclusive reconcile lock (reconcile.lock), so
// reconcilers take turns. Without wait it tries once; with wait it retries
// until timeout (timeout <= 0: wait as long as it takes). acquired is false,
// with a nil error, when another process holds the lock; unlock releases it.
func (s *Store) LockReconcile(wait bool, timeout time.Duration) (unlock func(), acquired bool, err error) {
	if !wait {
		timeout = 0
	} else if timeout <= 0 {
		timeout = -1
	}
	return lockFile(s.ReconcileLockPath(), lockEX, timeout)
}

// lockDB takes state.db.lock, shared for readers and exclusive for writers,
// waiting up to the store's timeout. A read-only store that cannot create
// the lock file goes on without it: bbolt's own lock still protects the file.
func (s *Store) lockDB(write bool) (func(), error) {
	how := lockSH
	if write {
		how = lockEX
	}
	path := filepath.Join(s.dir, dbLockFile)
	unlock, ok, err := lockFile(path, how, s.timeout)
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

// lockFile flocks path (created 0600 if missing). timeout 0 tries once;
// timeout < 0 blocks; otherwise it polls with a short, growing, jittered
// delay, which wakes waiters far sooner than bbolt's fixed 50 ms.
func lockFile(path string, how int, timeout time.Duration) (func(), bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if errors.Is(err, os.ErrPermission) && how == unix.LOCK_SH {
		f, err = os.Open(path)
	}
	if err != nil {
		return nil, false, fmt.Errorf("lock file %s: %w", path, err)
	}
	ok, err := flockWait(int(f.Fd()), how, timeout)
	if err != nil || !ok {
		f.Close()
		if err != nil {
			err = fmt.Errorf("lock file %s: %w", path, err)
		}
		return nil, false, err
	}
	unlock := func() {
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	}
	return unlock, true, nil
}

func flockWait(fd, how int, timeout time.Duration) (bool, error) {
	if timeout < 0 {
		return true, ignoringEINTR(func() error { return unix.Flock(fd, how) })
	}
	deadline := time.Now().Add(timeout)
	delay := 100 * time.Microsecond
	for {
		err := ignoringEINTR(func() error { return unix.Flock(fd, how|unix.LOCK_NB) })
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			return false, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false, nil
		}
		sleep := time.Duration(float64(delay) * (0.5 + rand.Float64()))
		time.Sleep(min(sleep, left))
		delay = min(2*delay, 10*time.Millisecond)
	}
}

func ignoringEINTR(fn func() error) error {
	for {
		if err := fn(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
