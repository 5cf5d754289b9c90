package logfile

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
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
// rotation lock's) is refused, and the file it points at is untouched.
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
				t.Errorf("opened the log through a symlink at %s", link)
			}
			if got, _ := os.ReadFile(victim); string(got) != "root:x:0:0\n" {
				t.Errorf("the link's target changed: %q", got)
			}
		})
	}
}
