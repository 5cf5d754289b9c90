package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// summary is Run's line: how many, why, and the command that runs them.
func summary(n int64) string {
	pkg := packageDir()
	return fmt.Sprintf("%s: %d root-only tests skipped: not root (run them with: sudo -E go test -count=1 %s)", pkg, n, pkg)
}

// packageDir is the test's package as a path from the module's root
// ("./netns/"); a test runs in its package's directory.
func packageDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return "this package"
	}
	for dir := wd; dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			rel, _ := filepath.Rel(dir, wd)
			return strings.TrimSuffix("./"+filepath.ToSlash(rel)+"/", "./")
		}
	}
	return wd
}

// tell writes line where whoever ran the tests sees it. `go test ./...`
// keeps a passing package's output back unless -v, so without -v the line
// goes to the parent's (the go command's) standard error, reopened through
// /proc; a regular file is left alone, as a second offset into it could
// overwrite the go command's own lines.
func tell(line string) {
	if !testing.Verbose() {
		f, err := os.OpenFile(fmt.Sprintf("/proc/%d/fd/2", os.Getppid()), os.O_WRONLY|os.O_APPEND, 0)
		if err == nil {
			defer f.Close()
			if st, err := f.Stat(); err == nil && !st.Mode().IsRegular() {
				if _, err := fmt.Fprintln(f, line); err == nil {
					return
				}
			}
		}
	}
	fmt.Fprintln(os.Stderr, line)
}
