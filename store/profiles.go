package store

import (
	"net/netip"
	"time"

	"vpc-cni/pool"
)

// scanPool is usable for a profile's pool, whose addresses the avail index
// does not hold: its ready ENIs whose groups did not drift, in device
// order, their blocks that are not releasing, their free or cooled down
// addresses.
func (t *Tx) scanPool(now time.Time, in pool.Config, fn func(dev int, ip netip.Addr) bool) (cooling int, err error) {
	recs, err := t.eniRecords()
	if err != nil {
		return 0, err
	}
	for _, r := range recs {
		if r.Profile != in.Profile || !usableENI(r) || r.DeviceIndex < pool.FirstPodDevice(in) {
			continue
		}
		blocks, err := t.eniBlocks(r.ID)
		if err != nil {
			return cooling, err
		}
		for _, b := range blocks {
			if b.Releasing {
				continue
			}
			addrs, err := t.blockAddrs(r.ID, b.CIDR)
			if err != nil {
				return cooling, err
			}
			for _, ad := range addrs {
				st := ad.Rec.State
				if st != pool.Free && st != pool.Cooling {
					continue
				}
				if !pool.Usable(pool.Addr{State: st, Since: ad.Rec.Since}, now, in.Cooldown) {
					cooling++
					continue
				}
				if !fn(r.DeviceIndex, ad.IP) {
					return cooling, nil
				}
			}
		}
	}
	return cooling, nil
}
