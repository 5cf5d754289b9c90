package logfile

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"vpc-cni/internal/testsupport/testenv"
)

// Many writers, each opening the file as a plugin process does (rotating it
// when it is over the limit), writing a few whole lines and closing: every
// line ends up in exactly one file, whole, and the number of files is
// bounded.
func TestConcurrentWritersLoseNoLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		keep int
	}{{"all kept", 1000}, {"bounded", 3}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "plugin.log")
			const writers, opens, lines = 16, 20, 10
			var wg sync.WaitGroup
			errs := make(chan error, writers)
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs <- write(path, tc.keep, w, opens, lines)
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			seen, files := readAll(t, dir)
			if files > tc.keep+1 {
				t.Errorf("%d log files, want at most %d", files, tc.keep+1)
			}
			if tc.keep < 1000 {
				return // old lines were dropped on purpose; wholeness is checked by readAll
			}
			if files < 3 {
				t.Errorf("only %d files: the test did not rotate", files)
			}
			for w := range writers {
				for i := range opens * lines {
					if n := seen[line(w, i)]; n != 1 {
						t.Errorf("line %q seen %d times", line(w, i), n)
					}
				}
			}
		})
	}
}

// write is one writer: opens times, open (maybe rotate), lines whole lines
// in single writes, close.
func write(path string, keep, w, opens, lines int) error {
	for o := range opens {
		f, err := OpenWith(path, 2048, keep)
		if err != nil {
			return err
		}
		for l := range lines {
			if _, err := f.WriteString(line(w, o*lines+l) + "\n"); err != nil {
				return err
			}
		}
		f.Close()
	}
	return nil
}

func line(w, i int) string {
	return fmt.Sprintf("writer=%02d line=%04d %s", w, i, strings.Repeat("x", 40))
}

// readAll counts every line of every log file and checks each is whole.
func readAll(t *testing.T, dir string) (map[string]int, int) {
	t.Helper()
	seen := map[string]int{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".lock") {
			continue
		}
		files++
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if len(data) > 0 && data[len(data)-1] != '\n' {
			t.Errorf("%s ends in a partial line", e.Name())
		}
		sc := bufio.NewScanner(strings.NewReader(string(data)))
		for sc.Scan() {
			l := sc.Text()
			var w, i int
			if n, _ := fmt.Sscanf(l, "writer=%02d line=%04d", &w, &i); n != 2 || l != line(w, i) {
				t.Errorf("%s: split or mixed line %q", e.Name(), l)
				continue
			}
			seen[l]++
		}
	}
	return seen, files
}

// Under the limit nothing is renamed and lines append to the same file.
func TestUnderTheLimitAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plugin.log")
	for i := range 3 {
		f, err := OpenWith(path, 1<<20, 2)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(f, "line %d\n", i)
		f.Close()
	}
	data, _ := os.ReadFile(path)
	if string(data) != "line 0\nline 1\nline 2\n" {
		t.Errorf("log: %q", data)
	}
	if _, err := os.Stat(path + ".1"); err == nil {
		t.Error("rotated under the limit")
	}
}

// The plugin runs as root: a symlink planted at the log's path (or its
// rotation lock's) is refused, and the file it points at is untouched. A
// refused lock costs only the rotation: the log goes on, saying why.
func TestASymlinkIsNotFollowed(t *testing.T) {
	for _, link := range []string{"plugin.log", "plugin.log.lock"} {
		t.Run(link, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "plugin.log")
			if link == "plugin.log.lock" { // reached only by a rotation
				if err := os.WriteFile(path, []byte(strings.Repeat("x", 100)+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			victim := filepath.Join(t.TempDir(), "shadow")
			if err := os.WriteFile(victim, []byte("root:x:0:0\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(victim, filepath.Join(dir, link)); err != nil {
				t.Fatal(err)
			}
			f, err := OpenWith(path, 10, 2)
			if err == nil {
				fmt.Fprintln(f, "a log line")
				f.Close()
				if link == "plugin.log" {
					t.Errorf("opened the log through a symlink at %s", link)
				}
			}
			if got, _ := os.ReadFile(victim); string(got) != "root:x:0:0\n" {
				t.Errorf("the link's target changed: %q", got)
			}
			if link == "plugin.log.lock" {
				wantNotRotated(t, path, "symlink")
			}
		})
	}
}

// overLimit is a log past a 10-byte limit, and its lock file's path.
func overLimit(t *testing.T) (path, lock string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "plugin.log")
	if err := os.WriteFile(path, []byte(strings.Repeat("x", 100)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, path + ".lock"
}

// openOrHang is OpenWith(path, 10, 2), failing the test if it does not
// return: a verb that opens the log would hang with it.
func openOrHang(t *testing.T, path string) *os.File {
	t.Helper()
	type opened struct {
		f   *os.File
		err error
	}
	done := make(chan opened, 1)
	go func() {
		f, err := OpenWith(path, 10, 2)
		done <- opened{f, err}
	}()
	select {
	case o := <-done:
		if o.err != nil {
			t.Fatal(o.err)
		}
		t.Cleanup(func() { o.f.Close() })
		return o.f
	case <-time.After(time.Minute):
		t.Fatal("OpenWith never returned while another process held the rotation lock")
		return nil
	}
}

// holdLock opens path as a holder would (its own open file description)
// and takes LOCK_EX on it until the test ends.
func holdLock(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	h, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, mode)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	if err := unix.Flock(int(h.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
}

func wantNotRotated(t *testing.T, path, why string) {
	t.Helper()
	if _, err := os.Stat(path + ".1"); err == nil {
		t.Errorf("rotated although %s", why)
	}
}

// A rotation lock another process holds is never waited for: the opener
// appends to the file as it is and leaves the rotation to the holder.
func TestAHeldLockIsNotWaitedFor(t *testing.T) {
	path, lock := overLimit(t)
	holdLock(t, lock, 0o600)
	f := openOrHang(t, path)
	if _, err := f.WriteString("a line\n"); err != nil {
		t.Fatal(err)
	}
	wantNotRotated(t, path, "another process held the lock")
}

// A lock file others could open (as every one before was: 0644), which one
// of them may hold open for ever, is replaced by a 0600 one, and the
// rotation happens.
func TestALockOthersCouldOpenIsReplaced(t *testing.T) {
	path, lock := overLimit(t)
	holdLock(t, lock, 0o644)
	openOrHang(t, path)
	if _, err := os.Stat(path + ".1"); err != nil {
		t.Errorf("not rotated: %v", err)
	}
	wantPrivate(t, lock)
}

// A new lock file is 0600: no other user can open it to hold it.
func TestANewLockIsPrivate(t *testing.T) {
	path, lock := overLimit(t)
	openOrHang(t, path)
	wantPrivate(t, lock)
}

// A lock file another user owns is not used: no rotation, and the log says
// why (as root, the plugin could otherwise flock a file that user holds).
func TestPrivilegedALockAnotherUserOwnsIsRefused(t *testing.T) {
	testenv.RequireRoot(t, "gives a file to another user")
	path, lock := overLimit(t)
	if err := os.WriteFile(lock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(lock, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	openOrHang(t, path).Close()
	wantNotRotated(t, path, "another user owns the lock")
	got, _ := os.ReadFile(path)
	if !strings.Contains(string(got), `msg="log not rotated"`) || !strings.Contains(string(got), "owned by uid 65534") {
		t.Errorf("the log does not say why it was not rotated:\n%s", got)
	}
}

func wantPrivate(t *testing.T, path string) {
	t.Helper()
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: %v; want mode 0600", path, modeOf(fi, err))
	}
}

func modeOf(fi os.FileInfo, err error) any {
	if err != nil {
		return err
	}
	return fmt.Sprintf("mode %04o", fi.Mode().Perm())
}
