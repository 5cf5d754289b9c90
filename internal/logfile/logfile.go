// Package logfile opens the plugin's log file and rotates it by size when a
// process opens it: there is no daemon to rotate it, and logrotate's
// copytruncate would cut lines that plugin processes are writing.
//
// Rotation is safe with many plugin processes at once: it runs under an
// exclusive flock on a sidecar lock file, renames whole files (a process still
// writing to the old file keeps its descriptor and its lines land, whole, in
// path.1), and every log record is one O_APPEND write, so no line is split or
// interleaved. Under the limit, opening costs one fstat more than before.
//
// No process ever waits for that lock: every CNI verb opens the log, and a
// lock a verb waits on would let whoever holds it stop every pod start. A
// process that finds it held leaves the rotation to the holder and appends
// to the file as it is. The lock file is 0600 and this process's own, so no
// other user can open it to hold it; one that others could open (or may
// hold open already) is replaced.
package logfile

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Defaults for the plugin's log: about 60 MB on disk at most.
const (
	MaxSize = 10 << 20 // bytes before the file is rotated at the next open
	Keep    = 5        // old files kept: path.1 (newest) .. path.5
)

// Open opens path for appending, rotating it first if it has reached
// MaxSize.
func Open(path string) (*os.File, error) {
	return OpenWith(path, MaxSize, Keep)
}

// OpenWith is Open with a size limit and a number of old files to keep. A
// rotation that fails leaves the file as it is, with a line saying why.
func OpenWith(path string, maxSize int64, keep int) (*os.File, error) {
	f, err := openAppend(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil || fi.Size() < maxSize {
		return f, nil // a file we cannot stat is still worth logging to
	}
	f.Close()
	rerr := rotate(path, maxSize, keep)
	if f, err = openAppend(path); err != nil {
		return nil, err
	}
	if rerr != nil { // the log goes on unrotated, and says why in itself
		fmt.Fprintf(f, "time=%s level=WARN msg=\"log not rotated\" error=%q\n", time.Now().Format(time.RFC3339), rerr.Error())
	}
	return f, nil
}

// openAppend never follows a symlink at path: the plugin runs as root, and a
// link planted where its log goes would have it append to any file.
func openAppend(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY|unix.O_NOFOLLOW, 0o644)
	if errors.Is(err, unix.ELOOP) {
		return nil, fmt.Errorf("log file %s is a symlink; refusing to write through it (remove it, or set logFile to a real path)", path)
	}
	return f, err
}

// rotate shifts path → path.1 → ... → path.keep (dropping the oldest) under
// the lock, unless another process holds it or rotated the file meanwhile.
func rotate(path string, maxSize int64, keep int) error {
	unlock, err := tryLock(path + ".lock")
	if unlock == nil {
		return err // held by another process: its rotation, not ours
	}
	defer unlock()
	if fi, err := os.Stat(path); err != nil || fi.Size() < maxSize {
		return nil // rotated by another process meanwhile
	}
	if keep < 1 {
		return os.Remove(path)
	}
	for i := keep - 1; i >= 1; i-- {
		err := os.Rename(old(path, i), old(path, i+1))
		if err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("rotating %s: %w", path, err)
		}
	}
	if err := os.Rename(path, old(path, 1)); err != nil {
		return fmt.Errorf("rotating %s: %w", path, err)
	}
	return nil
}

// tryLock takes the exclusive flock on the lock file at path without
// waiting: nil, nil when another process holds it.
func tryLock(path string) (unlock func(), err error) {
	f, err := openLock(path)
	if err != nil {
		return nil, err
	}
	err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	for errors.Is(err, unix.EINTR) {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	}
	if err == nil && !samePath(f, path) {
		err = unix.EWOULDBLOCK // replaced meanwhile: its new file is the lock now
	}
	if err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, nil
		}
		return nil, fmt.Errorf("log rotation lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil // closing releases the flock
}

// openLock opens (or creates, 0600) the lock file. One this process's user
// does not own is refused; one that group or others may open is removed and
// made again: whoever opened it may hold it for ever.
func openLock(path string) (*os.File, error) {
	for range 2 {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|unix.O_NOFOLLOW, 0o600)
		if err != nil {
			return nil, fmt.Errorf("log rotation lock: %w", err)
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("log rotation lock: %w", err)
		}
		st, _ := fi.Sys().(*syscall.Stat_t)
		if st != nil && int(st.Uid) != os.Geteuid() {
			f.Close()
			return nil, fmt.Errorf("log rotation lock %s is owned by uid %d, not this process's %d: remove it", path, st.Uid, os.Geteuid())
		}
		if fi.Mode().Perm()&0o077 == 0 {
			return f, nil
		}
		f.Close()
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return nil, fmt.Errorf("log rotation lock %s: mode %04o lets others open it, and removing it failed: %w", path, fi.Mode().Perm(), err)
		}
	}
	return nil, fmt.Errorf("log rotation lock %s: replaced by another process while opened", path)
}

// samePath is whether path still names f's file.
func samePath(f *os.File, path string) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	now, err := os.Lstat(path)
	return err == nil && os.SameFile(fi, now)
}

// old is the name of the i-th old file.
func old(path string, i int) string { return path + "." + strconv.Itoa(i) }
