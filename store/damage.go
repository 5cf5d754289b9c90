package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"

	bolt "go.etcd.io/bbolt"
)

// A damaged state file (truncated by a full disk or a careless copy, a page
// overwritten) makes bbolt panic, or fault on its mmap: SIGBUS for a page
// past the end of the file. Every transaction runs with the goroutine's
// faults turned into panics and recovers them, so every entry point gets an
// error wrapping ErrDamaged instead of a crash.

// ErrDamaged marks a state file whose pages cannot be read.
var ErrDamaged = errors.New("state file damaged")

// damagedError says what was found and what to do.
type damagedError struct {
	path  string
	cause string
}

func (e *damagedError) Error() string {
	return fmt.Sprintf("%v: %s: %s; fix: `vpcctl state rebuild` rebuilds it from EC2, the kernel and the runtime's CNI cache",
		ErrDamaged, e.path, e.cause)
}

func (e *damagedError) Is(target error) bool { return target == ErrDamaged }

func damaged(path, format string, args ...any) error {
	return &damagedError{path: path, cause: fmt.Sprintf(format, args...)}
}

// guardFaults makes this goroutine's memory faults recoverable panics until
// the returned func restores the previous setting.
func guardFaults() (restore func()) {
	old := debug.SetPanicOnFault(true)
	return func() { debug.SetPanicOnFault(old) }
}

// recoverDamage turns r, a recovered panic, into a damage error in *err.
func recoverDamage(path string, err *error, r any) {
	if f, ok := r.(interface{ Addr() uintptr }); ok {
		*err = damaged(path, "memory fault reading its mapping at %#x (a page past the end of the file?)", f.Addr())
	} else if r != nil {
		*err = damaged(path, "reading it failed: %v", r)
	}
}

// magicScanLimit bounds how much of a file bbolt cannot open is searched for
// the magic: a state file is kilobytes to a few megabytes.
const magicScanLimit = 64 << 20

// holdsMagic reports whether the file at path contains the schema's magic
// value anywhere in its first magicScanLimit bytes. With both bbolt meta
// pages unreadable the data pages may still be intact: a file with the
// magic in them is a damaged vpc-cni state file, not someone else's.
func holdsMagic(path string) bool {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	keep := len(magic) - 1 // a match may straddle two reads
	have, total := 0, 0
	for total < magicScanLimit {
		n, err := f.Read(buf[have:])
		have += n
		total += n
		if bytes.Contains(buf[:have], magic) {
			return true
		}
		if err != nil {
			return false
		}
		if have > keep {
			have = copy(buf, buf[have-keep:have])
		}
	}
	return false
}

// checkSize refuses a file shorter than the pages its meta page claims: a
// read of the missing pages would fault.
func checkSize(btx *bolt.Tx, path string, fileSize int64) error {
	if fileSize > 0 && fileSize < btx.Size() {
		return damaged(path, "truncated: %d bytes, but its pages reach %d", fileSize, btx.Size())
	}
	return nil
}

// CheckFile walks the whole file: its size against its pages, the free page
// list and every page below the high-water mark (the open preloads the list
// and Page reads each header), every bucket, key and value reachable from
// the root, and then bbolt's own consistency check (every page reachable or
// free, none freed twice). Any fault or inconsistency is an ErrDamaged
// error. bbolt's check runs in a goroutine of its own whose faults could not
// be recovered, so it runs only after the walk here has touched every page
// safely. Read-only: it never writes the file.
func (s *Store) CheckFile() error {
	if exists, err := s.fileExists(); err != nil {
		return err
	} else if !exists {
		return fmt.Errorf("%s: %w", s.path, ErrNotInitialized)
	}
	// The size first, on an open that reads no page but the meta pages:
	// loading the free page list of a truncated file reads past its end.
	err := s.withDB(false, false, false, func(db *bolt.DB, size int64) error {
		return db.View(func(btx *bolt.Tx) error { return checkSize(btx, s.path, size) })
	})
	if err != nil {
		return err
	}
	return s.withDB(false, true, false, func(db *bolt.DB, size int64) error {
		return db.View(func(btx *bolt.Tx) error { return checkPages(btx, s.path) })
	})
}

func checkPages(btx *bolt.Tx, path string) error {
	pages := btx.Size() / int64(btx.DB().Info().PageSize)
	for id := 2; int64(id) < pages; id++ { // 0 and 1 are the meta pages bbolt checked on open
		if info, err := btx.Page(id); err != nil || info == nil {
			return damaged(path, "page %d: unreadable (%v)", id, err)
		}
	}
	if err := btx.ForEach(func(name []byte, b *bolt.Bucket) error { return walkBucket(b) }); err != nil {
		return damaged(path, "walking the buckets: %v", err)
	}
	var problems []error
	for err := range btx.Check() {
		problems = append(problems, err)
	}
	if len(problems) > 0 {
		return damaged(path, "%v", errors.Join(problems...))
	}
	return nil
}

// walkBucket reads every key and value of b and its sub-buckets.
func walkBucket(b *bolt.Bucket) error {
	var sum byte
	return b.ForEach(func(k, v []byte) error {
		if v == nil {
			if child := b.Bucket(k); child != nil {
				return walkBucket(child)
			}
		}
		for _, c := range v {
			sum ^= c
		}
		return nil
	})
}

// letGo releases a damaged file bbolt could not close: its descriptor and
// every mapping of it in this process. bbolt's flock belongs to the open
// file, which a mapping keeps alive, so without the unmap the next open in
// this process would wait for a lock nobody will release. (Another
// transaction of this process on the same file loses its mapping too; its
// fault is recovered as the same damage.)
func letGo(f *os.File) {
	if f == nil {
		return
	}
	info, err := f.Stat()
	f.Close()
	st, ok := info.Sys().(*syscall.Stat_t)
	if err != nil || !ok {
		return
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(maps), "\n") {
		// start-end perms offset dev inode path
		fields := strings.Fields(line)
		if len(fields) < 6 || fields[4] != strconv.FormatUint(st.Ino, 10) {
			continue
		}
		lo, hi, _ := strings.Cut(fields[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 == nil && err2 == nil {
			_, _, _ = syscall.Syscall(syscall.SYS_MUNMAP, uintptr(start), uintptr(end-start), 0)
		}
	}
}
