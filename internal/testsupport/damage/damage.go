// Package damage breaks a bbolt file the ways a bad disk or a careless copy
// does, for the tests that show a damaged state is an error, not a crash.
package damage

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"

	bolt "go.etcd.io/bbolt"
)

// Kinds are the damages every entry point must survive.
var Kinds = []string{"truncated below the high-water mark", "truncated to half", "page overwritten", "meta pages garbled"}

// Do applies the named damage to the bbolt file at path.
func Do(path, kind string) error {
	switch kind {
	case Kinds[0]:
		hwm, _, err := highWater(path)
		if err != nil {
			return err
		}
		return os.Truncate(path, hwm-hwm/4)
	case Kinds[1]:
		info, err := os.Stat(path)
		if err != nil {
			return err
		}
		return os.Truncate(path, info.Size()/2)
	case Kinds[2]:
		return overwriteRoot(path)
	case Kinds[3]:
		return garbleMeta(path)
	}
	return fmt.Errorf("unknown damage %q", kind)
}

// highWater is the size the file's pages reach and its page size.
func highWater(path string) (hwm int64, pageSize int, err error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		return 0, 0, err
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error { hwm = tx.Size(); return nil })
	return hwm, db.Info().PageSize, err
}

// garbleMeta overwrites both meta pages (0 and 1), bbolt's only way into
// the file, with bytes that are not a page; the data pages stay as they were.
func garbleMeta(path string) error {
	_, pageSize, err := highWater(path)
	if err != nil {
		return err
	}
	return writeJunk(path, 0, 2*pageSize, 7)
}

// overwriteRoot fills the page of the root bucket, which every transaction
// reads to find its buckets, with bytes that are not a page.
func overwriteRoot(path string) error {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	var root uint64
	err = db.View(func(tx *bolt.Tx) error {
		root = uint64(tx.Cursor().Bucket().Root())
		return nil
	})
	pageSize := db.Info().PageSize
	db.Close()
	if err != nil {
		return err
	}
	return writeJunk(path, int64(root)*int64(pageSize), pageSize, root)
}

// writeJunk writes n pseudo-random bytes (seeded by seed) at off.
func writeJunk(path string, off int64, n int, seed uint64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	junk := bytes.Repeat([]byte{0}, n)
	r := rand.New(rand.NewPCG(seed, 9))
	for i := range junk {
		junk[i] = byte(r.Uint32())
	}
	if _, err := f.WriteAt(junk, off); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
