package store

import (
	"bytes"
	"fmt"
	"time"

	"vpc-cni/pool"
)

// Waiters are ADDs that found no free address and wait for an inline grow:
// the grow pass sizes itself to all of them. Each entry carries the ADD's
// deadline, so one left by a killed process stops counting on its own.
var waiterPrefix = []byte("waiter/")

func waiterKey(key string) []byte { return append(bytes.Clone(waiterPrefix), key...) }

// PutWaiter records that the ADD for key waits until until for pool p's
// addresses, and drops entries whose deadline has passed. The value is the
// deadline, then the pool's name (empty for the default pool).
func (t *Tx) PutWaiter(key string, p pool.Pool, until, now time.Time) error {
	if key == "" {
		return fmt.Errorf("waiter without a key: %w", ErrInvalid)
	}
	var expired [][]byte
	err := t.forWaiters(func(k []byte, deadline time.Time, _ pool.Pool) {
		if !deadline.After(now) {
			expired = append(expired, bytes.Clone(k))
		}
	})
	if err != nil {
		return err
	}
	b := t.bucket(bState)
	for _, k := range expired {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return b.Put(waiterKey(key), append(appendTime(nil, until), p...))
}

// DeleteWaiter removes key's entry; a missing one is fine.
func (t *Tx) DeleteWaiter(key string) error { return t.bucket(bState).Delete(waiterKey(key)) }

// Waiter reports whether key has an entry (expired or not).
func (t *Tx) Waiter(key string) bool { return t.bucket(bState).Get(waiterKey(key)) != nil }

// Waiting counts the ADDs waiting now, by the pool they wait for.
func (t *Tx) Waiting(now time.Time) (map[pool.Pool]int, error) {
	n := map[pool.Pool]int{}
	err := t.forWaiters(func(_ []byte, deadline time.Time, p pool.Pool) {
		if deadline.After(now) {
			n[p]++
		}
	})
	return n, err
}

func (t *Tx) forWaiters(fn func(k []byte, deadline time.Time, p pool.Pool)) error {
	c := t.bucket(bState).Cursor()
	for k, v := c.Seek(waiterPrefix); k != nil && bytes.HasPrefix(k, waiterPrefix); k, v = c.Next() {
		if len(v) < 8 {
			return fmt.Errorf("%s: waiter %q: bad deadline %x: %w", t.path, k, v, ErrInconsistent)
		}
		fn(k, readTime(v[:8]), pool.Pool(v[8:]))
	}
	return nil
}
