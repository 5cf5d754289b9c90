// Package gotool builds the tests' tools (crictl, cnitool, helm) from the Go
// module proxy into a cache kept between runs. Only tests import it.
package gotool

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
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
	path, err := Install(pkg, version, name)
	if err != nil {
		tb.Fatal(err)
	}
	return path
}

// CacheDir is ~/.cache/vpc-cni-e2e, where every tool is kept between runs.
func CacheDir() string {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "vpc-cni-e2e")
}

// Install is Build for callers without a testing.TB (the cluster tool).
func Install(pkg, version, name string) (string, error) {
	cache := CacheDir()
	final := filepath.Join(cache, name+"-"+version)
	if _, err := os.Stat(filepath.Join(final, name)); err == nil {
		return filepath.Join(final, name), nil
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(cache, name+"-build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command(Go(), "install", pkg+"@"+version)
	cmd.Dir = tmp // outside any module: pkg@version resolves through the proxy alone
	cmd.Env = append(os.Environ(), "GOBIN="+tmp, "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go install %s@%s: %v\n%s", pkg, version, err, out)
	}
	if err := os.Rename(tmp, final); err != nil {
		if _, serr := os.Stat(filepath.Join(final, name)); serr != nil {
			return "", fmt.Errorf("caching %s: %v", name, err)
		}
	}
	return filepath.Join(final, name), nil
}

// Module is a scratch module that builds main packages whose own go.mod
// cannot be installed with `go install pkg@version` (replace directives:
// k8s.io/kubernetes's staging modules, etcd's sibling modules).
type Module struct {
	Name     string            // the cache entry: ~/.cache/vpc-cni-e2e/<Name>-<Version>/
	Version  string            // of Require
	Require  string            // the module path, at Version
	Replace  map[string]string // module path -> the published version it stands for
	Packages []string          // main packages; each binary is named after its last element
	// Tests are packages built as test binaries (go test -c), each named
	// after its last element with ".test" (k8s.io/kubernetes/test/e2e: e2e.test).
	Tests   []string
	LDFlags string
}

// built are the binaries m's cache entry holds.
func (m Module) built() []string {
	var out []string
	for _, p := range m.Packages {
		out = append(out, BinaryName(p))
	}
	for _, p := range m.Tests {
		out = append(out, BinaryName(p)+".test")
	}
	return out
}

// BuildModule builds m's packages into its cache entry (once; a temp dir
// renamed into place) and returns the entry's directory. log gets the go
// command's output as it runs.
func BuildModule(m Module, log io.Writer) (string, error) {
	final := filepath.Join(CacheDir(), m.Name+"-"+m.Version)
	if have(final, m.built()) {
		return final, nil
	}
	if err := os.MkdirAll(CacheDir(), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(CacheDir(), m.Name+"-build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "go.mod"), []byte(m.goMod()), 0o644); err != nil {
		return "", err
	}
	out := filepath.Join(tmp, "out")
	steps := m.steps(out)
	for _, args := range steps {
		cmd := exec.Command(Go(), args...)
		cmd.Dir = tmp
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("go %s (in %s): %v", args[0], m.Name, err)
		}
	}
	if err := os.Rename(out, final); err != nil && !have(final, m.built()) {
		return "", fmt.Errorf("caching %s: %v", m.Name, err)
	}
	return final, nil
}

// goMod is the scratch module's go.mod.
func (m Module) goMod() string {
	var mod strings.Builder
	fmt.Fprintf(&mod, "module vpc-cni-e2e/%s\n\ngo 1.26.0\n\nrequire %s %s\n", m.Name, m.Require, m.Version)
	for path, v := range m.Replace {
		fmt.Fprintf(&mod, "\nreplace %s => %s %s\n", path, path, v)
	}
	return mod.String()
}

// steps are the go commands that build m into out: get, build, test -c.
func (m Module) steps(out string) [][]string {
	get := []string{"get"}
	if len(m.Tests) > 0 {
		get = append(get, "-t") // the test binaries' own dependencies
	}
	for _, p := range append(m.Packages, m.Tests...) {
		get = append(get, p+"@"+m.Version)
	}
	steps := [][]string{get}
	if len(m.Packages) > 0 {
		steps = append(steps, append([]string{"build", "-trimpath", "-ldflags", m.LDFlags, "-o", out + "/"}, m.Packages...))
	}
	for _, p := range m.Tests {
		steps = append(steps, []string{"test", "-c", "-trimpath", "-ldflags", m.LDFlags, "-o", filepath.Join(out, BinaryName(p)+".test"), p})
	}
	return steps
}

func have(dir string, names []string) bool {
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			return false
		}
	}
	return true
}

// BinaryName is the name go build gives pkg's binary: its last element,
// or the one before a major version suffix (go.etcd.io/etcd/server/v3: server).
func BinaryName(pkg string) string {
	base := path.Base(pkg)
	if len(base) > 1 && base[0] == 'v' && strings.Trim(base[1:], "0123456789") == "" {
		return path.Base(path.Dir(pkg))
	}
	return base
}
