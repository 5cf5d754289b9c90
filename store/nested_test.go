package store

import (
	"errors"
	"sync"
	"testing"
)

// A View or Update inside a View or Update on the same state file fails at
// once with ErrNested, before the lock its caller holds could time it out,
// whether through the same Store or another one on the same directory; the
// outer transaction still commits.
func TestNestedTransactionFailsAtOnce(t *testing.T) {
	s := newStore(t)
	other, err := OpenNew(s.Dir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name         string
		outer, inner func(func(*Tx) error) error
	}{
		{"View in Update", s.Update, s.View},
		{"Update in Update", s.Update, s.Update},
		{"Update in View", s.View, s.Update},
		{"View in View", s.View, s.View},
		{"Update in another Store's Update", s.Update, other.Update},
	} {
		var inner error
		err = c.outer(func(*Tx) error {
			inner = c.inner(func(*Tx) error { return nil })
			return nil
		})
		if err != nil || !errors.Is(inner, ErrNested) {
			t.Errorf("%s: outer %v, inner %v; want the inner to fail with %v", c.name, err, inner, ErrNested)
		}
	}
}

// Transactions of other goroutines are not nested: they wait their turn.
func TestConcurrentTransactionsAreNotNested(t *testing.T) {
	s := newStore(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- s.Update(func(tx *Tx) error { return tx.AddCounter("n", 1) })
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}
