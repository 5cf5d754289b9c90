package commands

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"vpc-cni/internal/testsupport/testenv"
)

// A state dir that cannot be made exits 1 and names the path.
func TestUnwritableStateDirExit1(t *testing.T) {
	file := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(file, "state")
	vpc(t, nil, "--state-dir", dir, "pool", "status").want(t, 1, dir)
	vpc(t, nil, "--state-dir", dir, "reconcile").want(t, 1, dir)
	if !testenv.IsRoot() { // root writes through permissions
		ro := filepath.Join(t.TempDir(), "ro")
		if err := os.Mkdir(ro, 0o500); err != nil {
			t.Fatal(err)
		}
		vpc(t, nil, "--state-dir", ro, "pool", "status").want(t, 1, ro)
	}
}

// A state file that is not a vpc-cni database is refused and never touched.
func TestForeignStateFileUntouched(t *testing.T) {
	foreign := map[string]func(path string) error{
		"text": func(path string) error { return os.WriteFile(path, []byte("hello, not a database\n"), 0o600) },
		"another bbolt database": func(path string) error {
			db, err := bolt.Open(path, 0o600, nil)
			if err != nil {
				return err
			}
			err = db.Update(func(tx *bolt.Tx) error {
				b, err := tx.CreateBucket([]byte("theirs"))
				if err != nil {
					return err
				}
				return b.Put([]byte("k"), []byte("v"))
			})
			return errors.Join(err, db.Close())
		},
	}
	for name, write := range foreign {
		t.Run(name, func(t *testing.T) {
			_, env := newSim(t, "m5.large")
			dir := t.TempDir()
			db := filepath.Join(dir, "state.db")
			if err := write(db); err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadFile(db)
			for _, args := range [][]string{{"reconcile"}, {"pool", "status"}, {"pool", "warm", "--ip-target", "3"}} {
				vpc(t, env, append([]string{"--state-dir", dir}, args...)...).want(t, 1, db)
				if after, _ := os.ReadFile(db); !bytes.Equal(before, after) {
					t.Fatalf("%v changed the foreign file", args)
				}
			}
		})
	}
}

// `pool status` on a dir without state: exit 1 with what to do. On a state
// whose node no pass has learnt yet: one line, or JSON saying not initialized.
func TestPoolStatusFresh(t *testing.T) {
	dir := t.TempDir()
	vpc(t, nil, "--state-dir", dir, "pool", "status").want(t, 1, "no state in "+dir)
	vpc(t, nil, "--state-dir", dir, "pool", "warm", "--reset", "--no-reconcile").want(t, 0)
	r := vpc(t, nil, "--state-dir", dir, "pool", "status")
	r.want(t, 0)
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); len(lines) != 1 {
		t.Errorf("want one line, got %d: %q", len(lines), r.stdout)
	}
	r = vpc(t, nil, "--state-dir", dir, "pool", "status", "-o", "json")
	r.want(t, 0)
	var st map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, r.stdout)
	}
	if st["initialized"] != false {
		t.Errorf(`"initialized" = %v, want false`, st["initialized"])
	}
	if enis, ok := st["enis"].([]any); !ok || len(enis) != 0 {
		t.Errorf(`"enis" = %#v, want []`, st["enis"])
	}
}

// --state-dir works after the command too, and the innermost one wins.
func TestStateDirAfterTheCommand(t *testing.T) {
	outer, inner := t.TempDir(), t.TempDir()
	for _, dir := range []string{outer, inner} {
		vpc(t, nil, "--state-dir", dir, "pool", "warm", "--reset", "--no-reconcile").want(t, 0)
	}
	r := vpc(t, nil, "--state-dir", outer, "pool", "status", "--state-dir", inner, "-o", "json")
	r.want(t, 0)
	var st struct{ StateDir string }
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatal(err)
	}
	if st.StateDir != inner {
		t.Errorf("status used %s, want the command's --state-dir %s", st.StateDir, inner)
	}
	r = vpc(t, []string{"VPC_CNI_STATE_DIR=" + outer}, "pool", "status", "-o", "json")
	r.want(t, 0, outer)
}
