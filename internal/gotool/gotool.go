// Package gotool builds the tests' tools (crictl, cnitool, helm) from the Go
// module proxy into a cache kept between runs. Only tests import it.
package gotool

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Go is the go command that builds the tools.
func Go() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "/usr/local/go/bin/go"
}

// Build builds pkg at version (`go install pkg@version`) into
// ~/.cache/vpc-cni-e2e/<name>-<version>/ and returns the binary's path. The
// build goes to a temp dir renamed into place, so parallel runs never see
// half a binary.
func Build(tb testing.TB, pkg, version, name string) string {
	tb.Helper()
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	cache := filepath.Join(base, "vpc-cni-e2e")
	final := filepath.Join(cache, name+"-"+version)
	if _, err := os.Stat(filepath.Join(final, name)); err == nil {
		return filepath.Join(final, name)
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		tb.Fatal(err)
	}
	tmp, err := os.MkdirTemp(cache, name+"-build-")
	if err != nil {
		tb.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command(Go(), "install", pkg+"@"+version)
	cmd.Dir = tmp // outside any module: pkg@version resolves through the proxy alone
	cmd.Env = append(os.Environ(), "GOBIN="+tmp, "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go install %s@%s: %v\n%s", pkg, version, err, out)
	}
	if err := os.Rename(tmp, final); err != nil {
		if _, serr := os.Stat(filepath.Join(final, name)); serr != nil {
			tb.Fatalf("caching %s: %v", name, err)
		}
	}
	return filepath.Join(final, name)
}
