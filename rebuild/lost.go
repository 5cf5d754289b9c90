package rebuild

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"vpc-cni/netns"
	"vpc-cni/reconcile"
	"vpc-cni/store"
)

// EventRebuilt is the kind of the event every rebuild records; doctor
// finds the last one. **contract** (vpcctl events)
const EventRebuilt = "state-rebuilt"

// Lost is a state file that holds no pool on a node whose kernel shows
// running pods' wiring (reconcile.Lost: a pass refuses to create the file
// over them with the same value).
type Lost = reconcile.Lost

// IsLost is the pure decision: a fresh store and running pods.
func IsLost(fresh bool, hs netns.HostState) Lost {
	if !fresh {
		return Lost{}
	}
	return Lost{Pods: hs.RunningPods()}
}

// Fresh reports whether the store holds no pool: the file is missing, or
// no pass or rebuild ever adopted an ENI into it (a new file an ADD made).
// One read transaction; no netlink.
func Fresh(st *store.Store) (bool, error) {
	var enis int
	err := st.View(func(tx *store.Tx) error {
		snap, err := tx.Snapshot()
		enis = len(snap.ENIs)
		return err
	})
	if errors.Is(err, store.ErrNotInitialized) {
		return true, nil // missing, or removed under this Store (ErrReplaced too)
	}
	return enis == 0, err
}

// Detect is lost state as the node shows it now. The kernel is read only
// when the store is fresh, so a node with state pays one read transaction.
func Detect(st *store.Store, list func() (netns.HostState, error)) (Lost, error) {
	fresh, err := Fresh(st)
	if err != nil || !fresh {
		return Lost{}, err
	}
	hs, err := list()
	if err != nil {
		return Lost{}, fmt.Errorf("reading the pods' wiring from the kernel: %w", err)
	}
	return IsLost(true, hs), nil
}

// Recover rebuilds lost state in place, before anything can hand out a
// running pod's address: EC2's node and ENIs adopted and every running pod's
// assignment restored in one transaction, and an event recorded. A store
// that is not lost is left alone (nil report). The caller holds the
// reconcile lock: every taker of a fresh store's addresses needs it (an
// ADD finds none free until a pass or rebuild has run).
func Recover(ctx context.Context, st *store.Store, o Options) (*Report, Lost, error) {
	list := o.ListHost
	if list == nil {
		list = func() (netns.HostState, error) { return netns.ListHostWith(o.VethPrefix) }
	}
	lost, err := Detect(st, list)
	if err != nil || lost.Pods == 0 {
		return nil, lost, err
	}
	wired, err := netns.DiscoverPodsWith(o.VethPrefix)
	if err != nil {
		return nil, lost, fmt.Errorf("reading the pods' wiring from the kernel: %w", err)
	}
	cache := ReadCNICache(filepath.Join(o.CNICacheDir, "results"))
	out := &Report{Pods: []Pod{}}
	runner, err := o.NewRunner()
	if err != nil {
		return out, lost, err
	}
	why := fmt.Sprintf("the state file was missing or new with %d running pods' wiring on the node", lost.Pods)
	if o.kept != nil {
		why = fmt.Sprintf("another instance's state file was set aside as %s, with %d running pods' wiring on the node", o.kept.Path, lost.Pods)
		out.kept = o.kept
	}
	return out, lost, out.adopt(ctx, runner, wired, cache, why)
}

// Restored is how many pods' assignments the rebuild recorded.
func (out *Report) Restored() int { return out.restored }

// event is the rebuild's line in `vpcctl events`.
func (out *Report) event(why string, now time.Time) store.Event {
	return store.Event{Time: now, Kind: EventRebuilt, Message: fmt.Sprintf(
		"rebuilt from the kernel and EC2 (%s): %s restored, %s, %s", why, reconcile.Plural(out.restored, "pod", "pods"),
		reconcile.Plural(out.ENIs, "ENI", "ENIs"), reconcile.Plural(out.Addresses, "address", "addresses"))}
}

// PassOptions are what the one owner of a pass needs: how to rebuild lost
// state (Options, whose NewRunner also runs the pass) and the pass's own.
type PassOptions struct {
	Options
	Pass reconcile.Options
}

// Pass is the one way every caller runs a pass (reconcile, the loop, pool
// warm, install, the plugin's inline grow): lost state is rebuilt first, and
// a pass that finds it lost after all (the file removed after the look)
// gets it rebuilt and runs once more. The caller holds the reconcile lock.
// rebuilt reports a rebuild, if one ran.
func Pass(ctx context.Context, st *store.Store, o PassOptions) (rep *reconcile.Report, rebuilt *Report, lost Lost, err error) {
	for try := 0; ; try++ {
		rebuilt, lost, err = Recover(ctx, st, o.Options)
		if err != nil {
			if lost.Pods > 0 {
				err = fmt.Errorf("%s; rebuilding it failed: %w", lost.Message(), err)
			}
			return nil, rebuilt, lost, err
		}
		runner, err := o.NewRunner()
		if err != nil {
			return nil, rebuilt, lost, err
		}
		rep, err = runner.Run(ctx, o.Pass)
		if !reconcile.IsLostState(err) || try > 0 {
			return rep, rebuilt, lost, err
		}
		var l reconcile.Lost
		if errors.As(err, &l) && l.Kept != nil {
			o.kept = l.Kept // the rebuild records it in the new file
		}
	}
}

// Ensure makes sure the state file exists before a caller writes to it
// outside a pass (pool warm's overrides): lost state is rebuilt, and a new
// node with no running pod gets an empty file. The caller holds the
// reconcile lock.
func Ensure(ctx context.Context, st *store.Store, o Options) (*Report, Lost, error) {
	rebuilt, lost, err := Recover(ctx, st, o)
	if err != nil || rebuilt != nil {
		return rebuilt, lost, err
	}
	err = st.View(func(*store.Tx) error { return nil })
	if !errors.Is(err, store.ErrNotInitialized) {
		return nil, lost, err
	}
	return nil, lost, st.Create(func(*store.Tx) error { return nil })
}
