package e2e

import (
	"testing"

	"vpc-cni/internal/testsupport/gotool"
)

// goBinary is the go command that builds the tests' tools.
func goBinary() string { return gotool.Go() }

// goTool builds pkg at version from the Go module proxy into the tools' cache.
func goTool(tb testing.TB, pkg, version, name string) string {
	return gotool.Build(tb, pkg, version, name)
}
