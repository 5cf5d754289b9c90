package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"vpc-cni/internal/testsupport/testenv"
)

// The state dir is the node's alone: each unsafe shape is refused with the
// fix in the message, and neither the file nor what a link points at
// changes.
func TestUnsafeStatePathsAreRefused(t *testing.T) {
	cases := map[string]struct {
		root  bool                                            // needs root (chown)
		setup func(t *testing.T, dir, db string) (any string) // returns a path that must not change
		says  string
	}{
		"relative dir": {says: "absolute path"},
		"dir writable by others": {setup: func(t *testing.T, dir, db string) string {
			must(t, os.Chmod(dir, 0o777))
			return ""
		}, says: "chmod 0700"},
		"dir writable by group": {setup: func(t *testing.T, dir, db string) string {
			must(t, os.Chmod(dir, 0o770))
			return ""
		}, says: "chmod 0700"},
		"state.db writable by others": {setup: func(t *testing.T, dir, db string) string {
			must(t, os.Chmod(db, 0o666))
			return db
		}, says: "chmod 0600"},
		"state.db a symlink": {setup: func(t *testing.T, dir, db string) string {
			target := filepath.Join(t.TempDir(), "elsewhere")
			must(t, os.WriteFile(target, []byte("someone else's file\n"), 0o600))
			must(t, os.Remove(db))
			must(t, os.Symlink(target, db))
			return target
		}, says: "symlink"},
		"dir owned by another user": {root: true, setup: func(t *testing.T, dir, db string) string {
			must(t, os.Chown(dir, 4242, 4242))
			return ""
		}, says: "chown"},
		"state.db owned by another user": {root: true, setup: func(t *testing.T, dir, db string) string {
			must(t, os.Chown(db, 4242, 4242))
			return db
		}, says: "chown"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if c.root {
				testenv.RequireRoot(t, "gives a file to another user")
			}
			s := newStore(t)
			dir := s.Dir()
			var keep string
			if c.setup != nil {
				keep = c.setup(t, dir, s.Path())
			} else {
				wd, _ := os.Getwd()
				rel, err := filepath.Rel(wd, dir)
				must(t, err)
				dir = rel
			}
			var before []byte
			if keep != "" {
				before, _ = os.ReadFile(keep)
			}
			for _, opts := range []Options{{}, {ReadOnly: true}, {Lazy: true}} {
				var err error
				if st, openErr := Open(dir, opts); openErr != nil {
					err = openErr
				} else if opts.ReadOnly {
					err = st.View(func(*Tx) error { return nil })
				} else {
					err = st.Update(func(*Tx) error { return nil })
				}
				if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), c.says) {
					t.Errorf("%+v: %v, want ErrUnsafe saying %q", opts, err, c.says)
				}
			}
			if keep != "" {
				if after, _ := os.ReadFile(keep); string(after) != string(before) {
					t.Errorf("%s changed", keep)
				}
			}
		})
	}
}

// A mode that only lets others read is tightened when the store is opened
// for writing, since that is safe.
func TestReadableModesAreTightened(t *testing.T) {
	s := newStore(t)
	must(t, os.Chmod(s.Dir(), 0o755))
	must(t, os.Chmod(s.Path(), 0o644))
	if _, err := OpenNew(s.Dir(), Options{}); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{s.Dir(): 0o700, s.Path(): 0o600} {
		info, err := os.Stat(path)
		must(t, err)
		if got := info.Mode().Perm(); got != want {
			t.Errorf("%s: mode %04o, want %04o", path, got, want)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
