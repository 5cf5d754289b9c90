package status

import (
	"errors"
	"sort"
	"strings"
	"time"

	"vpc-cni/internal/printers"
	"vpc-cni/store"
)

// Events is what `vpcctl events` shows: the newest events with the pods
// they name, and the store's counters. A state never written has none.
type Events struct {
	Events   []EventView      `json:"events"`
	Counters map[string]int64 `json:"counters"`
}

// LoadEvents reads the newest limit events and the counters in one transaction.
func LoadEvents(st *store.Store, limit int) (Events, error) {
	out := Events{[]EventView{}, map[string]int64{}}
	err := st.View(func(tx *store.Tx) error {
		events, err := tx.Events(limit)
		if err != nil {
			return err
		}
		as, err := tx.Assignments()
		if err != nil {
			return err
		}
		out.Events = nameEventPods(events, as)
		out.Counters, err = tx.Counters()
		return err
	})
	if err != nil && !errors.Is(err, store.ErrNotInitialized) {
		return out, err
	}
	return out, nil
}

// nameEventPods finds the assignment keys each event names among the
// assignments the node still holds.
func nameEventPods(events []store.Event, as []store.Assignment) []EventView {
	out := make([]EventView, len(events))
	for i, e := range events {
		out[i].Event = e
		for _, a := range as {
			if a.PodName != "" && strings.Contains(e.Message, a.Key) {
				out[i].Pods = append(out[i].Pods, PodRef{PodName(a.PodNamespace, a.PodName), a.ContainerID, a.IfName})
			}
		}
	}
	return out
}

// WithPods is the message with "(pod ns/name)" after each key it names.
func (e EventView) WithPods() string {
	msg := e.Message
	for _, p := range e.Pods {
		key := store.AssignmentKey(p.ContainerID, p.IfName)
		msg = strings.Replace(msg, key, key+" (pod "+p.Pod+")", 1)
	}
	return msg
}

// EventsTable renders the events, then the counters in name order (every
// counter -o json shows, so the table is never the lesser view).
func EventsTable(t *printers.Table, out Events) {
	t.Header("TIME", "KIND", "MESSAGE")
	for _, e := range out.Events {
		t.Row(e.Time.Format(time.RFC3339), e.Kind, e.WithPods())
	}
	t.Blank()
	t.Header("COUNTER", "VALUE")
	names := make([]string, 0, len(out.Counters))
	for name := range out.Counters {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Row(name, out.Counters[name])
	}
}
