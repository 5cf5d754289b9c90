package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// RefusedPassFile holds the last reconcile pass that stopped because EC2's
// answer contradicted the node (a wrong region, another account, an endpoint
// that does not know the instance). It lives beside state.db, not in it: such
// a pass writes nothing of the node, its ENIs or its assignments (the state
// may be a copy from another node; only the EC2 budget tokens it took are
// kept), yet status and doctor still show its error. **contract**
const RefusedPassFile = "refused-pass.json"

// PutRefusedPass records a refused pass, replacing the file atomically.
func (s *Store) PutRefusedPass(r ReconcileReport) error {
	if s.readOnly {
		return fmt.Errorf("%s: %w", s.path, ErrReadOnly)
	}
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(s.dir, ".refused-pass-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(s.dir, RefusedPassFile))
}

// RefusedPass reads the last refused pass; ok is false when there is none.
func (s *Store) RefusedPass() (r ReconcileReport, ok bool, err error) {
	path := filepath.Join(s.dir, RefusedPassFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return r, false, nil
	}
	if err != nil {
		return r, false, err
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, false, fmt.Errorf("%s: %w", path, err)
	}
	return r, true, nil
}

// ClearRefusedPass removes the record once a pass has been accepted.
func (s *Store) ClearRefusedPass() error {
	err := os.Remove(filepath.Join(s.dir, RefusedPassFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
