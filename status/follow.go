package status

import (
	"context"
	"time"

	"vpc-cni/store"
)

// FollowPoll is how often FollowEvents reads the state file: one short
// read transaction, as any status command.
const FollowPoll = time.Second

// FollowEvents gives emit the newest limit events, then every new one,
// until ctx ends. A state file replaced by a rebuild starts its numbering
// again: its events are new.
func FollowEvents(ctx context.Context, st *store.Store, limit int, emit func(EventView) error) error {
	var last uint64
	for first := true; ; first = false {
		out, err := LoadEvents(st, limit)
		if err != nil {
			return err
		}
		if n := len(out.Events); n > 0 && out.Events[n-1].Seq < last {
			last = 0
		}
		for _, e := range out.Events {
			if e.Seq <= last && !first {
				continue
			}
			last = e.Seq
			if err := emit(e); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(FollowPoll):
		}
	}
}
