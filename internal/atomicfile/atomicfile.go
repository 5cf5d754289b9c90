// Package atomicfile replaces files so that a reader (a CNI runtime reading
// the conflist, kubelet exec'ing the plugin binary, node-exporter reading a
// textfile) sees either the old bytes or the new ones, never a mix.
package atomicfile

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Same reports whether path already holds exactly data with mode perm.
func Same(path string, data []byte, perm fs.FileMode) bool {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != perm || fi.Size() != int64(len(data)) {
		return false
	}
	old, err := os.ReadFile(path)
	return err == nil && bytes.Equal(old, data)
}

// Write replaces path with data and mode perm: a temporary file in the same
// directory, synced, then renamed over path, then the directory synced. A
// process running the old file (a plugin mid-ADD) keeps its inode. Missing
// parent directories are made with mode 0755.
func Write(path string, data []byte, perm fs.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, a no-op
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
