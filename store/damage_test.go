package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"vpc-cni/pool"

	"vpc-cni/internal/testsupport/damage"
)

// populated is a store with four ENIs of 200 addresses and 300 pods: a
// file of many pages, so damage lands inside the data.
func populated(t *testing.T) *Store {
	t.Helper()
	s := newStore(t)
	update(t, s, func(tx *Tx) error {
		for dev := range 4 {
			if err := tx.PutENI(testENI(dev, true, seqBlocks(fmt.Sprintf("100.64.%d.1", dev+1), 200)...)); err != nil {
				return err
			}
		}
		for i := range 300 {
			mustTake(t, tx, fmt.Sprintf("container-%04d/eth0", i), t0, 0)
		}
		return nil
	})
	if err := s.CheckFile(); err != nil {
		t.Fatalf("CheckFile of a sound file: %v", err)
	}
	return s
}

// Every way in reports a damaged file as ErrDamaged, with what to do; none
// panics or faults (a fault here would kill the test binary).
func TestDamagedFileIsAnErrorNotACrash(t *testing.T) {
	for _, kind := range damage.Kinds {
		t.Run(kind, func(t *testing.T) {
			s := populated(t)
			if err := damage.Do(s.Path(), kind); err != nil {
				t.Fatal(err)
			}
			ways := map[string]func() error{
				"CheckFile":      s.CheckFile,
				"Open":           func() error { _, err := OpenNew(s.Dir(), Options{}); return err },
				"Open read-only": func() error { _, err := Open(s.Dir(), Options{ReadOnly: true}); return err },
				"Snapshot": func() error {
					return s.View(func(tx *Tx) error { _, err := tx.Snapshot(); return err })
				},
				"Check": func() error { return s.View(func(tx *Tx) error { return tx.Check() }) },
				"Take": func() error {
					return s.Update(func(tx *Tx) error { _, err := tx.Take(Assignment{Key: "new/eth0"}, t0, pool.Config{}); return err })
				},
				"Give": func() error {
					return s.Update(func(tx *Tx) error { _, _, err := tx.Give("container-0150/eth0", t0); return err })
				},
			}
			damagedSeen := 0
			for name, way := range ways {
				err := way()
				if errors.Is(err, ErrDamaged) {
					damagedSeen++
					if !strings.Contains(err.Error(), "vpcctl state rebuild") {
						t.Errorf("%s: %v: does not say what to do", name, err)
					}
				}
				if name == "CheckFile" && !errors.Is(err, ErrDamaged) {
					t.Errorf("CheckFile = %v, want ErrDamaged", err)
				}
				t.Logf("%s: %v", name, err)
			}
			if damagedSeen == 0 {
				t.Error("no way in saw the damage")
			}
		})
	}
}

// A read of a mapped page past the end of its file is a SIGBUS; inside a
// transaction's goroutine it is a recoverable panic, reported as damage.
func TestBusErrorIsRecovered(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, make([]byte, 8192), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mem, err := syscall.Mmap(int(f.Fd()), 0, 8192, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(mem)
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	read := func() (err error) {
		defer guardFaults()()
		defer func() { recoverDamage(path, &err, recover()) }()
		sink = mem[4096]
		return nil
	}
	err = read()
	if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "fault") {
		t.Fatalf("read past the end = %v, want ErrDamaged naming the fault", err)
	}
	t.Log(err)
}

var sink byte
