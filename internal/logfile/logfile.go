// Package logfile opens the plugin's log file and rotates it by size when a
// process opens it: there is no daemon to rotate it, and logrotate's
// copytruncate would cut lines that plugin processes are writing.
//
// Rotation is safe with many plugin processes at once: it runs under an
// exclusive flock on a sidecar lock file, renames whole files (a process still
// writing to the old file keeps its descriptor and its lines land, whole, in
// path.1), and every log record is one O_APPEND write, so no line is split or
// interleaved. Under the limit, opening costs one fstat more than before.
package logfile

import (
	"errors"
	"fmt"
	"os"
	"strconv"

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

// OpenWith is Open with a size limit and a number of old files to keep.
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
	if err := rotate(path, maxSize, keep); err != nil {
		return nil, err
	}
	return openAppend(path)
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
// the lock, unless another process rotated it while this one waited.
func rotate(path string, maxSize int64, keep int) error {
	lock, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR|unix.O_NOFOLLOW, 0o644)
	if err != nil {
		return fmt.Errorf("log rotation lock: %w", err)
	}
	defer lock.Close() // releases the flock
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("log rotation lock: %w", err)
	}
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

// old is the name of the i-th old file.
func old(path string, i int) string { return path + "." + strconv.Itoa(i) }
