package store

import (
	"encoding/binary"
	"fmt"
	"time"
)

// MaxEvents is how many events the store keeps; older ones are dropped.
const MaxEvents = 500

// Event is one line of `vpcctl events`.
type Event struct {
	Time    time.Time `json:"time"`
	Kind    string    `json:"kind"`
	Message string    `json:"message"`
	Seq     uint64    `json:"seq,omitempty"` // its place in the file, set when read (events --follow)
}

// AddCounter adds delta to the named counter.
func (t *Tx) AddCounter(name string, delta int64) error {
	if name == "" {
		return fmt.Errorf("counter without name: %w", ErrInvalid)
	}
	b := t.bucket(bCounters)
	var n int64
	if v := b.Get([]byte(name)); len(v) == 8 {
		n = int64(binary.BigEndian.Uint64(v))
	}
	return b.Put([]byte(name), binary.BigEndian.AppendUint64(nil, uint64(n+delta)))
}

// Counters returns every counter.
func (t *Tx) Counters() (map[string]int64, error) {
	out := map[string]int64{}
	err := t.bucket(bCounters).ForEach(func(k, v []byte) error {
		if len(v) != 8 {
			return fmt.Errorf("%s: counter %q: bad value %x", t.path, k, v)
		}
		out[string(k)] = int64(binary.BigEndian.Uint64(v))
		return nil
	})
	return out, err
}

// AddEvent appends an event, dropping the oldest beyond MaxEvents.
func (t *Tx) AddEvent(e Event) error {
	b := t.bucket(bEvents)
	seq, err := b.NextSequence()
	if err != nil {
		return err
	}
	e.Seq = 0 // the key holds it
	if err := t.putJSON(bEvents, binary.BigEndian.AppendUint64(nil, seq), e); err != nil {
		return err
	}
	if seq <= MaxEvents {
		return nil
	}
	oldest := binary.BigEndian.AppendUint64(nil, seq-MaxEvents)
	var drop [][]byte
	c := b.Cursor()
	for k, _ := c.First(); k != nil && string(k) <= string(oldest); k, _ = c.Next() {
		drop = append(drop, k)
	}
	for _, k := range drop {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// Events returns the newest limit events (all if limit <= 0), oldest first.
func (t *Tx) Events(limit int) ([]Event, error) {
	var out []Event
	c := t.bucket(bEvents).Cursor()
	for k, v := c.Last(); k != nil && (limit <= 0 || len(out) < limit); k, v = c.Prev() {
		var e Event
		if err := jsonValue(v, &e); err != nil {
			return nil, fmt.Errorf("%s: event %x: %w", t.path, k, err)
		}
		if len(k) == 8 {
			e.Seq = binary.BigEndian.Uint64(k)
		}
		out = append(out, e)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}
