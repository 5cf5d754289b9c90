package store

import (
	"testing"
	"time"

	"vpc-cni/pool"
)

func TestWaitersCountUntilTheirDeadline(t *testing.T) {
	s := newStore(t)
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	count := func(at time.Time) int {
		t.Helper()
		var n int
		if err := s.View(func(tx *Tx) (err error) { by, err := tx.Waiting(at); n = by[pool.DefaultPool]; return err }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	update(t, s, func(tx *Tx) error {
		if err := tx.PutWaiter("a/eth0", pool.DefaultPool, now.Add(time.Minute), now); err != nil {
			return err
		}
		if err := tx.PutWaiter("b/eth0", pool.DefaultPool, now.Add(10*time.Second), now); err != nil {
			return err
		}
		return tx.PutWaiter("a/eth0", pool.DefaultPool, now.Add(time.Minute), now) // the same ADD again: one entry
	})
	if n := count(now); n != 2 {
		t.Fatalf("%d waiting, want 2", n)
	}
	if n := count(now.Add(30 * time.Second)); n != 1 {
		t.Fatalf("after b's deadline: %d waiting, want 1 (a killed ADD stops counting)", n)
	}
	update(t, s, func(tx *Tx) error { return tx.DeleteWaiter("a/eth0") })
	if n := count(now); n != 1 {
		t.Fatalf("after a left: %d waiting, want 1", n)
	}
	// A new waiter sweeps entries whose deadline passed.
	update(t, s, func(tx *Tx) error {
		return tx.PutWaiter("c/eth0", pool.DefaultPool, now.Add(2*time.Minute), now.Add(time.Minute))
	})
	if n := count(now); n != 1 {
		t.Fatalf("b's expired entry survived the sweep: %d waiting at the start, want 1 (c)", n)
	}
	// Waiters never disturb the rest of the state bucket.
	update(t, s, func(tx *Tx) error {
		return tx.PutPoolTimers(pool.DefaultPool, pool.Timers{ExcessSince: now, GrowBlockedUntil: time.Time{}, GrowBlockedWhy: ""})
	})
	if err := s.View(func(tx *Tx) error { return tx.Check() }); err != nil {
		t.Fatal(err)
	}
}
