package settings

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"vpc-cni/internal/fileguard"
	"vpc-cni/internal/testsupport/testenv"
)

// Every root process on the node acts on the configuration file, so one
// that another user owns, or that group or others may write, is refused with
// the file, its owner and its mode named; a root-owned file reached through
// a symlink (a ConfigMap mount's shape) is read.
func TestUnsafeConfigFileIsRefused(t *testing.T) {
	const text = "WARM_IP_TARGET=3\n"
	cases := []struct {
		name   string
		root   bool // needs root (chown)
		mode   os.FileMode
		uid    int // -1: leave it
		link   bool
		refuse []string // what the error names; none: accepted
	}{
		{name: "0666 owned by nobody", root: true, mode: 0o666, uid: 65534, refuse: []string{"uid 65534", "mode 0666", "chown", "chmod 0644"}},
		{name: "0644 owned by nobody", root: true, mode: 0o644, uid: 65534, refuse: []string{"uid 65534", "chown"}},
		{name: "0620 writable by group", mode: 0o620, uid: -1, refuse: []string{"mode 0620", "chmod 0644"}},
		{name: "0644 ours", mode: 0o644, uid: -1},
		{name: "0600 ours through a symlink", mode: 0o600, uid: -1, link: true},
		{name: "0666 through a symlink", mode: 0o666, uid: -1, link: true, refuse: []string{"mode 0666"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.root {
				testenv.RequireRoot(t, "gives a file to another user")
			}
			dir := t.TempDir()
			path := filepath.Join(dir, "config")
			if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, c.mode); err != nil {
				t.Fatal(err)
			}
			if c.uid >= 0 {
				if err := os.Chown(path, c.uid, c.uid); err != nil {
					t.Fatal(err)
				}
			}
			if c.link {
				link := filepath.Join(dir, "link")
				if err := os.Symlink(path, link); err != nil {
					t.Fatal(err)
				}
				path = link
			}
			f, err := ReadFile(path, true)
			if len(c.refuse) == 0 {
				if err != nil || f.vals["WARM_IP_TARGET"].text != "3" {
					t.Fatalf("ReadFile = %v, %v; want the file read", f, err)
				}
				return
			}
			if !errors.Is(err, fileguard.ErrUnsafe) || !strings.Contains(err.Error(), "configuration file "+path) {
				t.Fatalf("ReadFile = %v; want ErrUnsafe naming the configuration file %s", err, path)
			}
			for _, s := range c.refuse {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%v: does not say %q", err, s)
				}
			}
		})
	}
}
