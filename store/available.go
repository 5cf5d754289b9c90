package store

import (
	"time"

	"vpc-cni/pool"
)

// AvailableAtLeast reports whether at least n addresses can be handed out now
// (free, or cooled down, on ready ENIs, outside releasing blocks). It stops
// counting at n, so the plugin can ask after every ADD at little cost.
func (t *Tx) AvailableAtLeast(n int, now time.Time, cooldown time.Duration) (bool, error) {
	return t.AvailableAtLeastFrom(n, now, cooldown, 0)
}

// AvailableAtLeastFrom is AvailableAtLeast counting only the ENIs of device
// index firstDevice and above, as TakeFrom takes.
func (t *Tx) AvailableAtLeastFrom(n int, now time.Time, cooldown time.Duration, firstDevice int) (bool, error) {
	if n <= 0 {
		return true, nil
	}
	seen := 0
	c := t.bucket(bAvail).Cursor()
	for k, v := c.Seek(availFrom(firstDevice)); k != nil; k, v = c.Next() {
		state, since, err := decodeAvail(v)
		if err != nil {
			return false, err
		}
		if !pool.Usable(pool.Addr{State: state, Since: since}, now, cooldown) { // the policy's rule: still cooling
			continue
		}
		if seen++; seen >= n {
			return true, nil
		}
	}
	return false, nil
}
