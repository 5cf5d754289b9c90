package store

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// pollEvery is how often a waiter for the reconcile lock looks whether the
// state file changed (a stat), and so whether an address may have come free.
const pollEvery = 10 * time.Millisecond

// LockReconcileOr waits up to timeout for the reconcile lock, as
// LockReconcile(true, timeout) does, and meanwhile, while a pass other than
// an ADD's holds it, calls try whenever the state file has changed since it
// last did: an ADD waiting for an address takes one as soon as a commit (a
// grow, a DEL) frees one, instead of waiting out a background pass that
// does not serve it. Behind another ADD's inline grow it only waits: that
// ADD serves the waiters it counted, and a burst's waiters all looking at
// every commit would cost more than they gain. When try reports true it
// stops waiting and returns acquired false; the pending lock request is
// dropped as soon as the kernel answers it.
func (s *Store) LockReconcileOr(timeout time.Duration, try func() bool) (unlock func(), acquired bool, err error) {
	path := s.ReconcileLockPath()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, false, fmt.Errorf("lock file %s: %w", path, err)
	}
	fd := int(f.Fd())
	if err := ignoringEINTR(func() error { return unix.Flock(fd, lockEX|unix.LOCK_NB) }); err == nil {
		return s.heldReconcile(f, path), true, nil
	} else if !errors.Is(err, unix.EWOULDBLOCK) {
		f.Close()
		return nil, false, fmt.Errorf("lock file %s: %w", path, err)
	}
	done := make(chan error, 1)
	go func() { done <- ignoringEINTR(func() error { return unix.Flock(fd, lockEX) }) }()
	abandon := func() {
		go func() { <-done; f.Close() }() // closing the file releases the lock if it was taken
	}
	expired := time.NewTimer(timeout)
	defer expired.Stop()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	var seen fileStamp
	for {
		if now := s.stamp(); now != seen && heldBy(f) != holderADD {
			seen = now
			if try() {
				abandon()
				return nil, false, nil
			}
		}
		select {
		case err := <-done:
			if err != nil {
				f.Close()
				return nil, false, fmt.Errorf("lock file %s: %w", path, err)
			}
			return s.heldReconcile(f, path), true, nil
		case <-expired.C:
			abandon()
			return nil, false, nil
		case <-tick.C:
		}
	}
}

func (s *Store) heldReconcile(f *os.File, path string) func() {
	s.id.setLocked(true) // Create may make the file
	markHolder(path, holderADD)
	return func() {
		s.id.setLocked(false)
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	}
}

// fileStamp tells one version of the state file from another: a commit
// writes it (size or modification time), a replacement changes its inode.
type fileStamp struct {
	ino, size int64
	mtime     int64
	ok        bool
}

func (s *Store) stamp() fileStamp {
	var st unix.Stat_t
	if unix.Stat(s.path, &st) != nil {
		return fileStamp{}
	}
	return fileStamp{ino: int64(st.Ino), size: st.Size, mtime: st.Mtim.Nano(), ok: true}
}

// Who holds the reconcile lock, written into the lock file by the holder:
// an ADD's inline grow or another pass. A waiting ADD reads it to decide
// whether to look at the pool meanwhile (LockReconcileOr).
const (
	holderADD  = "add\n"
	holderPass = "pass\n"
)

// markHolder records the holder; best effort (a reader that cannot tell
// looks at the pool, as behind a pass).
func markHolder(path, who string) {
	f, err := os.OpenFile(path, os.O_WRONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte(who), 0); err == nil {
		_ = f.Truncate(int64(len(who)))
	}
}

// heldBy reads the holder the lock file names.
func heldBy(f *os.File) string {
	buf := make([]byte, 8)
	n, _ := f.ReadAt(buf, 0)
	return string(buf[:n])
}
