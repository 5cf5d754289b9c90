package store

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"vpc-cni/pool"
)

// Benchmarks of what a pod's ADD and DEL cost in the store: each Update
// opens the file, runs one transaction (fsync included) and closes it.
// Run: go test ./store -run '^$' -bench . -benchtime 400x -count 3

var benchSizes = []int{10, 1_000, 10_000}

// benchStore makes a pool of size /32 addresses, 50 per ENI, with the lower
// half assigned, so Take works on a realistic, half-full tree.
func benchStore(b testing.TB, size int) *Store {
	s := newStore(b)
	update(b, s, func(tx *Tx) error {
		for dev := 0; dev*50 < size; dev++ {
			n := min(50, size-dev*50)
			start := fmt.Sprintf("100.%d.%d.1", 64+dev/200, dev%200)
			if err := tx.PutENI(testENI(dev, true, seqBlocks(start, n)...)); err != nil {
				return err
			}
		}
		for i := range size / 2 {
			if _, err := tx.Take(Assignment{Key: fmt.Sprintf("pod-%d/eth0", i)}, t0, pool.Config{}); err != nil {
				return err
			}
		}
		return nil
	})
	return s
}

// reportLatency reports the median and 99th percentile of per-op times.
func reportLatency(b *testing.B, d []time.Duration) {
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(d[min(len(d)-1, len(d)*99/100)].Nanoseconds()), "p99-ns")
}

// BenchmarkTakeGive: one Take transaction and one Give transaction, each
// with its own open and close, per op. pages/op is what the two commits
// wrote. The nosync variant skips fsync to show the store's own cost apart
// from the disk's (production always syncs).
func BenchmarkTakeGive(b *testing.B) {
	for _, sync := range []bool{true, false} {
		for _, size := range benchSizes {
			name := fmt.Sprintf("addrs=%d", size)
			if !sync {
				name = "nosync/" + name
			}
			b.Run(name, func(b *testing.B) { benchTakeGive(b, size, !sync) })
		}
	}
}

// benchDB is the benchmarks' benchHook: fsync or not, and the pages written.
type benchDB struct {
	noSync bool
	pages  atomic.Int64
}

func (h *benchDB) opening(o *bolt.Options) { o.NoSync = h.noSync }
func (h *benchDB) closing(db *bolt.DB) {
	stats := db.Stats()
	h.pages.Add(stats.TxStats.GetWrite())
}

func benchTakeGive(b *testing.B, size int, noSync bool) {
	s := benchStore(b, size)
	hook := &benchDB{noSync: noSync}
	benchHook = hook
	defer func() { benchHook = nil }()
	const cooldown = 30 * time.Second
	now := t0.Add(time.Hour)
	d := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		key := fmt.Sprintf("bench-%d/eth0", i)
		start := time.Now()
		if err := s.Update(func(tx *Tx) error {
			_, err := tx.Take(Assignment{Key: key}, now, pool.Config{Cooldown: cooldown})
			return err
		}); err != nil {
			b.Fatal(err)
		}
		if err := s.Update(func(tx *Tx) error { _, _, err := tx.Give(key, now); return err }); err != nil {
			b.Fatal(err)
		}
		d = append(d, time.Since(start))
		now = now.Add(cooldown) // the address just given back has cooled
	}
	b.StopTimer()
	reportLatency(b, d)
	b.ReportMetric(float64(hook.pages.Load())/float64(b.N), "pages/op")
}

// BenchmarkTake: the Take transaction alone (open, tx, fsync, close).
func BenchmarkTake(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("addrs=%d", size), func(b *testing.B) {
			s := benchStore(b, size)
			d := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				key := fmt.Sprintf("bench-%d/eth0", i)
				start := time.Now()
				if err := s.Update(func(tx *Tx) error { _, err := tx.Take(Assignment{Key: key}, t0, pool.Config{}); return err }); err != nil {
					b.Fatal(err)
				}
				d = append(d, time.Since(start))
				b.StopTimer()
				update(b, s, func(tx *Tx) error { _, _, err := tx.Give(key, t0); return err })
				b.StartTimer()
			}
			b.StopTimer()
			reportLatency(b, d)
		})
	}
}

// BenchmarkOpenTake is a plugin process's whole store work for an ADD:
// Open (which validates the file read-only) and one Take transaction.
func BenchmarkOpenTake(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("addrs=%d", size), func(b *testing.B) {
			dir := benchStore(b, size).Dir()
			d := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				key := fmt.Sprintf("bench-%d/eth0", i)
				start := time.Now()
				s, err := OpenNew(dir, Options{})
				if err == nil {
					err = s.Update(func(tx *Tx) error { _, err := tx.Take(Assignment{Key: key}, t0, pool.Config{}); return err })
				}
				if err != nil {
					b.Fatal(err)
				}
				d = append(d, time.Since(start))
				b.StopTimer()
				update(b, s, func(tx *Tx) error { _, _, err := tx.Give(key, t0); return err })
				b.StartTimer()
			}
			b.StopTimer()
			reportLatency(b, d)
		})
	}
}

// BenchmarkSnapshot: the read-only transaction reconcile starts from.
func BenchmarkSnapshot(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("addrs=%d", size), func(b *testing.B) {
			s := benchStore(b, size)
			b.ResetTimer()
			for range b.N {
				var snap pool.Snapshot
				if err := s.View(func(tx *Tx) (err error) { snap, err = tx.Snapshot(); return err }); err != nil {
					b.Fatal(err)
				}
				if len(snap.ENIs) == 0 {
					b.Fatal("empty snapshot")
				}
			}
		})
	}
}

// BenchmarkContendedTakeGive: 8 writers at once (parallel pod ADD/DELs),
// each op a Take and a Give transaction; latency includes waiting for the
// file lock.
func BenchmarkContendedTakeGive(b *testing.B) {
	s := benchStore(b, 1_000)
	var mu sync.Mutex
	var d []time.Duration
	var n atomic.Int64
	b.SetParallelism(4) // 4 x GOMAXPROCS goroutines
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			key := fmt.Sprintf("bench-%d/eth0", n.Add(1))
			start := time.Now()
			err := s.Update(func(tx *Tx) error { _, err := tx.Take(Assignment{Key: key}, t0, pool.Config{}); return err })
			if err == nil {
				err = s.Update(func(tx *Tx) error { _, _, err := tx.Give(key, t0); return err })
			}
			if err != nil {
				b.Error(err)
				return
			}
			took := time.Since(start)
			mu.Lock()
			d = append(d, took)
			mu.Unlock()
		}
	})
	b.StopTimer()
	reportLatency(b, d)
}
