// Package testenv is what tests need of the machine they run on: root, and
// network namespaces of their own that are gone when the test ends. Only
// tests import it.
//
// A root-only test calls RequireRoot (NewNetNS does); a package with such
// tests runs them through Run from its TestMain, which says how many were
// skipped, so an unprivileged `go test ./...` does not pass in silence.
package testenv

import (
	"os"
	"sync/atomic"
	"testing"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/containernetworking/plugins/pkg/testutils"
)

var (
	inRun   atomic.Bool  // Run is running the package's tests
	skipped atomic.Int64 // root-only tests skipped so far
)

// IsRoot reports whether the test runs as root.
func IsRoot() bool { return os.Geteuid() == 0 }

// RequireRoot marks tb as root-only: it skips tb unless it runs as root, and
// counts the skip for Run. why says what needs root ("creates network
// namespaces"). It fails tb when the package's TestMain does not use Run,
// since the skip would otherwise go unreported.
func RequireRoot(tb testing.TB, why string) {
	tb.Helper()
	if !inRun.Load() {
		tb.Fatal("testenv.RequireRoot: the package's TestMain must run its tests with os.Exit(testenv.Run(m))")
	}
	if !IsRoot() {
		skipped.Add(1)
		tb.Skip("needs root: " + why)
	}
}

// Run runs the package's tests (call it from TestMain) and returns m.Run's
// exit code, after saying how many root-only tests it skipped, if any.
func Run(m *testing.M) int {
	inRun.Store(true)
	code := m.Run()
	if n := skipped.Load(); n > 0 {
		tell(summary(n))
	}
	return code
}

// NewNetNS makes a named network namespace (skipping tb without root),
// deleted when the test ends, pass or fail.
func NewNetNS(tb testing.TB) ns.NetNS {
	tb.Helper()
	RequireRoot(tb, "creates network namespaces")
	n, err := testutils.NewNS()
	if err != nil {
		tb.Fatalf("create netns: %v", err)
	}
	tb.Cleanup(func() { DeleteNetNS(n) })
	return n
}

// DeleteNetNS drops the test's references to n; the kernel then destroys
// the namespace and every link in it. Safe to call twice.
func DeleteNetNS(n ns.NetNS) {
	_ = n.Close()
	_ = testutils.UnmountNS(n)
}
