package store

import (
	"fmt"
	"time"
)

// A full spell: ADDs refused because the node had no address to give and
// could get none (pool.Explain). The mark makes `vpcctl events` show a
// spell's start and end once each, not one line per refused ADD (kubelet
// retries a sandbox every few seconds and would push every other event out).
var kFull = []byte("node-full")

// CounterAddsNodeFull counts ADDs refused on a full node.
const CounterAddsNodeFull = "cni_adds_node_full"

// FullSpell is the current spell.
type FullSpell struct {
	Since   time.Time `json:"since"`
	Limit   string    `json:"limit"`
	Refused int       `json:"refused"`
}

// MarkFull records an ADD refused on a full node; the first of a spell, or
// one that hit another limit, adds a "node-full" event with msg.
func (t *Tx) MarkFull(now time.Time, limit, msg string) error {
	var s FullSpell
	found, err := t.getJSON(bState, kFull, &s)
	if err != nil {
		return err
	}
	if !found || s.Limit != limit {
		s = FullSpell{Since: now, Limit: limit}
		if err := t.AddEvent(Event{Time: now, Kind: "node-full", Message: msg}); err != nil {
			return err
		}
	}
	s.Refused++
	if err := t.AddCounter(CounterAddsNodeFull, 1); err != nil {
		return err
	}
	return t.putJSON(bState, kFull, s)
}

// endFullSpell closes a spell when an ADD gets an address again: one Get on
// the ADD's path when there is none.
func (t *Tx) endFullSpell(now time.Time) error {
	var s FullSpell
	if found, err := t.getJSON(bState, kFull, &s); err != nil || !found {
		return err
	}
	msg := fmt.Sprintf("an ADD got an address again, after %d refused since %s (%s)",
		s.Refused, s.Since.UTC().Format(time.RFC3339), s.Limit)
	if err := t.AddEvent(Event{Time: now, Kind: "node-not-full", Message: msg}); err != nil {
		return err
	}
	return t.bucket(bState).Delete(kFull)
}
