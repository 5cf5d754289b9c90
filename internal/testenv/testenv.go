// Package testenv is what tests need of the machine they run on: root, and
// network namespaces of their own that are gone when the test ends. Only
// tests import it.
package testenv

import (
	"os"
	"testing"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/containernetworking/plugins/pkg/testutils"
)

// IsRoot reports whether the test runs as root.
func IsRoot() bool { return os.Geteuid() == 0 }

// RequireRoot skips tb unless it runs as root; why says what needs root
// ("creates network namespaces").
func RequireRoot(tb testing.TB, why string) {
	tb.Helper()
	if !IsRoot() {
		tb.Skip("needs root: " + why)
	}
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
