package plugin

import (
	"fmt"
	"time"

	"github.com/containernetworking/cni/pkg/types"

	"vpc-cni/store"
)

// EventRecordedAfterLoss is the kind of the event an ADD records when it
// wrote its pod into a state file made after its take. **contract**
// (vpcctl events)
const EventRecordedAfterLoss = "pod-recorded-after-rebuild"

// confirm makes sure the pod just wired is in the node's state file as it
// is now, before the ADD reports success. The file of the take still in
// place (one stat) is the common case. A file replaced since (a rebuild
// between take and wiring found no wiring of this pod and holds its address
// free) gets the pod recorded, under the reconcile lock so that no rebuild
// or pass is midway; a missing file is left missing: whatever creates it
// reads the kernel first, under that lock, and finds this pod. An address
// the current file does not give this node, gives another pod or is
// releasing fails the ADD (the caller unwires the pod).
func (c *call) confirm(a store.Assignment) error {
	same, err := c.store.Unchanged()
	if err == nil && same {
		return nil
	}
	c.log.Warn("the state file changed since the take: recording the pod in the current file", "ip", addrList(a), "err", err)
	deadline, _ := c.ctx.Deadline()
	unlock, held, err := c.store.LockReconcile(true, time.Until(deadline))
	if err != nil || !held {
		return c.notRecorded(a, fmt.Errorf("the reconcile lock was not free in time: %v", err))
	}
	defer unlock()
	cur, err := store.Open(c.cfg.StateDir, store.Options{Timeout: time.Until(deadline), Lazy: true})
	if err != nil {
		return c.notRecorded(a, err)
	}
	var recorded bool
	err = cur.Update(func(tx *store.Tx) (err error) {
		if recorded, err = tx.Record(a, c.now()); err != nil || !recorded {
			return err
		}
		return tx.AddEvent(store.Event{Time: c.now(), Kind: EventRecordedAfterLoss, Message: fmt.Sprintf(
			"pod %s/%s (%s) was wired with %s after a rebuild that did not see it: recorded", c.pod.Namespace, c.pod.Name, a.Key, addrList(a))})
	})
	switch {
	case err == nil:
		c.log.Info("the pod is in the current state file", "recorded", recorded)
		return nil
	case isUninitialized(err):
		c.log.Warn("no state file: the rebuild that makes one reads this pod's wiring from the kernel")
		return nil
	}
	return c.notRecorded(a, err)
}

// notRecorded is the ADD's error when its wired pod cannot be recorded:
// try again later, after the state is rebuilt.
func (c *call) notRecorded(a store.Assignment, why error) error {
	c.log.Error("the wired pod cannot be recorded in the current state file: unwiring it", "ip", addrList(a), "err", why)
	return types.NewError(types.ErrTryAgainLater, fmt.Sprintf(
		"pod %s/%s was wired with %s, but the state file was replaced or removed since its address was taken and the pod cannot be recorded in it: %v",
		c.pod.Namespace, c.pod.Name, addrList(a), why), "")
}
