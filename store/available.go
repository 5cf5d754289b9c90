package store

import (
	"net/netip"
	"time"

	"vpc-cni/pool"
)

// AvailableAtLeast reports whether at least n addresses of pool in.Profile
// can be handed out now (Take's choice: free, or cooled down, on its ready
// ENIs, outside releasing blocks). It stops counting at n, so the plugin can
// ask after every ADD at little cost.
func (t *Tx) AvailableAtLeast(n int, now time.Time, in pool.Config) (bool, error) {
	if n <= 0 {
		return true, nil
	}
	seen := 0
	_, err := t.usable(now, in, func(int, netip.Addr) bool { seen++; return seen < n })
	return seen >= n, err
}

// usable calls fn with each address of pool in.Profile that Take may hand
// out now, in pick order, until fn returns false; it returns how many it
// passed over because they were still cooling. The default pool's
// addresses are in the avail index, keyed by device first, so skipping the
// devices below pool.FirstPodDevice is one seek; a profile has a few ENIs
// of at most a few dozen blocks, so they are scanned.
func (t *Tx) usable(now time.Time, in pool.Config, fn func(dev int, ip netip.Addr) bool) (cooling int, err error) {
	if in.Profile != pool.DefaultPool {
		return t.scanPool(now, in, fn)
	}
	c := t.bucket(bAvail).Cursor()
	for k, v := c.Seek(availFrom(pool.FirstPodDevice(in))); k != nil; k, v = c.Next() {
		state, since, err := decodeAvail(v)
		if err != nil {
			return cooling, err
		}
		if !pool.Usable(pool.Addr{State: state, Since: since}, now, in.Cooldown) { // the policy's rule: still cooling
			cooling++
			continue
		}
		dev, ip, err := parseAvailKey(k)
		if err != nil || !fn(dev, ip) {
			return cooling, err
		}
	}
	return cooling, nil
}
