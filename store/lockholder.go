package store

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// LockWait is a wait for one of the reconcile lock files, as
// Options.OnLockWait is told of it.
type LockWait struct {
	Path string
	// Holder is the holder's own words in the file, "pid 123 since
	// 2026-12-07T00:00:00Z"; "" when it wrote none (a binary that does not,
	// or one that has just taken the lock).
	Holder   string
	Deadline time.Time // zero: no limit
}

// Describe is the wait in words: which file, held by whom, until when.
func (w LockWait) Describe(now time.Time) string {
	holder := "another process (it did not write who it is)"
	if w.Holder != "" {
		holder = w.Holder
	}
	until := "no deadline"
	if !w.Deadline.IsZero() {
		until = fmt.Sprintf("giving up at %s (in %s)", w.Deadline.UTC().Format(time.RFC3339), w.Deadline.Sub(now).Round(time.Second))
	}
	return fmt.Sprintf("waiting for the reconcile lock %s, held by %s; %s", w.Path, holder, until)
}

// lockHooks are what a reconcile lock file adds to a plain flock: the
// holder writes who it is into the file; a waiter reads it and says so.
// The files are 0600 and this user's, so no other user writes these words.
type lockHooks struct {
	timeout time.Duration
	onWait  func(LockWait) func(got bool)
}

// reconcileHooks are the hooks of this store's reconcile lock files.
func (s *Store) reconcileHooks(timeout time.Duration) *lockHooks {
	return &lockHooks{timeout: timeout, onWait: s.onLockWait}
}

// holderLine is what a holder writes: only words for waiters (flock does
// not look at the content).
func holderLine(now time.Time) string {
	return fmt.Sprintf("pid %d since %s\n", os.Getpid(), now.UTC().Format(time.RFC3339))
}

func (h *lockHooks) markHeld(f *os.File) {
	if h == nil || f.Truncate(0) != nil {
		return
	}
	_, _ = f.WriteAt([]byte(holderLine(time.Now())), 0)
}

// clearHeld empties the file before the lock goes, so no waiter reads a
// holder that is gone.
func (h *lockHooks) clearHeld(f *os.File) {
	if h != nil {
		_ = f.Truncate(0)
	}
}

// waitingOn is flockWait's hook for path: nil when no one is to be told.
func (h *lockHooks) waitingOn(path string) func(*os.File) func(bool) {
	if h == nil || h.onWait == nil {
		return nil
	}
	return func(f *os.File) func(bool) {
		w := LockWait{Path: path, Holder: readHolder(f)}
		if h.timeout > 0 {
			w.Deadline = time.Now().Add(h.timeout)
		}
		if done := h.onWait(w); done != nil {
			return done
		}
		return func(bool) {}
	}
}

// readHolder reads the holder's line: at most one short line of printable
// ASCII, else "".
func readHolder(f *os.File) string {
	buf := make([]byte, 96)
	n, _ := f.ReadAt(buf, 0)
	line, _, _ := strings.Cut(string(buf[:n]), "\n")
	for _, r := range line {
		if r < ' ' || r > '~' {
			return ""
		}
	}
	return line
}
