package store

import "path/filepath"

// Absent is a read-only handle on a state dir that holds no state yet (the
// directory or its file missing), for a dry run on a fresh node: every read
// answers ErrNotInitialized, every write ErrReadOnly, and it creates nothing,
// not even the directory or a lock file. Call it only after a read-only Open
// said ErrNotInitialized: that Open checked the path.
func Absent(dir string) *Store {
	return &Store{dir: dir, path: filepath.Join(dir, DBFile), timeout: DefaultTimeout, readOnly: true, id: &identity{}}
}
