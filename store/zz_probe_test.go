package store

import (
	"fmt"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func TestZZProbe(t *testing.T) {
	for _, size := range benchSizes {
		s := benchStore(t, size)
		var open, body, commit, closeT time.Duration
		var writes, written int64
		n := min(100, size/2)
		for i := range n {
			t1 := time.Now()
			db, err := bolt.Open(s.Path(), 0o600, &bolt.Options{Timeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			t2 := time.Now()
			btx, _ := db.Begin(true)
			tx := &Tx{tx: btx, path: s.Path()}
			if err := prepareWrite(btx, s.Path()); err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Take(Assignment{Key: fmt.Sprintf("p%d/eth0", i)}, t0, 0); err != nil {
				t.Fatal(err)
			}
			t3 := time.Now()
			if err := btx.Commit(); err != nil {
				t.Fatal(err)
			}
			st := btx.Stats()
			writes += st.GetWrite()
			t4 := time.Now()
			db.Close()
			t5 := time.Now()
			open += t2.Sub(t1)
			body += t3.Sub(t2)
			commit += t4.Sub(t3)
			closeT += t5.Sub(t4)
			info := db.Stats()
			_ = info
		}
		db, _ := bolt.Open(s.Path(), 0o600, &bolt.Options{Timeout: time.Second})
		st := db.Stats()
		db.Close()
		for _, ft := range []bolt.FreelistType{bolt.FreelistArrayType, bolt.FreelistMapType} {
			t1 := time.Now()
			for range 50 {
				db, _ := bolt.Open(s.Path(), 0o600, &bolt.Options{Timeout: time.Second, FreelistType: ft})
				db.Close()
			}
			t.Logf("size %d freelist %s: open+close %v, free pages %d pending %d", size, ft, time.Since(t1)/50, st.FreePageN, st.PendingPageN)
		}
		t1 := time.Now()
		for range 50 {
			db, _ := bolt.Open(s.Path(), 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: true})
			db.Close()
		}
		t.Logf("size %d read-only open+close %v", size, time.Since(t1)/50)
		fi, _ := fileSize(s.Path())
		written = fi
		t.Logf("size %5d: open %v body %v commit %v close %v pages written/tx %.1f file %d KiB",
			size, open/time.Duration(n), body/time.Duration(n), commit/time.Duration(n), closeT/time.Duration(n), float64(writes)/float64(n), written/1024)
	}
}
