package store

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"

	"vpc-cni/internal/fileguard"
)

// The state dir is the node's alone: whoever can write state.db, or the
// directory it lives in, can hand a pod's address to another pod or make a
// reconcile release addresses in use. So the store refuses a relative path,
// a directory or file that another user owns or that group or others may
// write, and a state.db that is a symlink (bbolt would write through it). A
// mode that only lets others read is tightened, and said so: that is safe.
//
// The checks cost no syscall beyond the ones the store makes anyway: the
// directory's stat (MkdirAll made it before) and an fstat of the opened file.

// ErrUnsafe marks a state dir or file that is refused for its ownership,
// mode or type (fileguard's rule).
var ErrUnsafe = fileguard.ErrUnsafe

// prepareDir checks the state directory, creating it 0700 if missing
// (unless read-only).
func (s *Store) prepareDir() error {
	if !filepath.IsAbs(s.dir) {
		return fmt.Errorf("state directory %q: %w: a relative path depends on the caller's working directory; give an absolute path",
			s.dir, ErrUnsafe)
	}
	info, err := os.Stat(s.dir)
	switch {
	case errors.Is(err, fs.ErrNotExist) && s.readOnly:
		return fmt.Errorf("state directory %s: %w", s.dir, ErrNotInitialized)
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(s.dir, 0o700); err != nil {
			return fmt.Errorf("state directory %s: %w", s.dir, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("state directory %s: %w", s.dir, err)
	case !info.IsDir():
		return fmt.Errorf("state directory %s: not a directory", s.dir)
	}
	return s.guard("state directory", s.dir, info, 0o700, func(m fs.FileMode) error { return os.Chmod(s.dir, m) })
}

// guard refuses info (of path) if another user owns it or group or others
// may write it (fileguard's rule), and tightens a mode that lets others read
// it to want.
func (s *Store) guard(what, path string, info fs.FileInfo, want fs.FileMode, chmod func(fs.FileMode) error) error {
	rule := fileguard.Rule{What: what, Mode: want, Else: "or use another --state-dir"}
	if err := rule.Check(path, info); err != nil {
		return err
	}
	mode := info.Mode().Perm()
	if mode&^want == 0 || s.readOnly {
		return nil
	}
	if err := chmod(want); err != nil {
		return fmt.Errorf("%s %s: mode %04o lets others read it, and tightening it failed: %w", what, path, mode, err)
	}
	slog.Warn("tightened the mode of the node's state: others could read it", "path", path, "was", fmt.Sprintf("%04o", mode), "now", fmt.Sprintf("%04o", want))
	return nil
}

// openFile is bbolt's OpenFile: it never follows a symlink, checks the
// opened file's owner and mode, and records the file and its size for the
// damage check.
func (s *Store) openFile(file **os.File, size *int64, create bool) func(string, int, os.FileMode) (*os.File, error) {
	return func(name string, flag int, perm os.FileMode) (*os.File, error) {
		if !create {
			flag &^= os.O_CREATE // a file removed since the caller looked is not made again
		}
		f, err := os.OpenFile(name, flag|syscall.O_NOFOLLOW, perm)
		if errors.Is(err, syscall.ELOOP) {
			return nil, symlinkError(name)
		}
		if err != nil {
			return nil, err
		}
		info, err := f.Stat()
		if err == nil {
			err = s.guard("state database", name, info, 0o600, f.Chmod)
		}
		if err != nil {
			f.Close()
			return nil, err
		}
		*file, *size = f, info.Size()
		return f, nil
	}
}

func symlinkError(path string) error {
	return fmt.Errorf("state database %s: %w: it is a symlink, and writes would land wherever it points; fix: remove the link (rm %s) and run `vpcctl state rebuild`, or point --state-dir at the real directory",
		path, ErrUnsafe, path)
}
