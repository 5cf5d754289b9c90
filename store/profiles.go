package store

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"vpc-cni/pool"
)

// takeIPv4 takes the pod's IPv4 from its pool: the default pool's through
// the avail index, a profile's from that profile's ENIs.
func (t *Tx) takeIPv4(a Assignment, now time.Time, cfg pool.Config) (Assignment, error) {
	if cfg.Profile == "" {
		return t.TakeFrom(a, now, cfg.Cooldown, pool.FirstPodDevice(cfg))
	}
	return t.TakeProfile(a, now, cfg.Cooldown, cfg.Profile)
}

// TakeProfile is Take among the ENIs of profile's pool: the lowest device
// index ready ENI of the profile whose groups did not drift, its lowest
// block, lowest usable address. A profile has a few ENIs of at most a few
// dozen blocks, so they are scanned; the avail index holds the default
// pool's addresses only. Idempotent as Take; ErrNoFreeAddress when the
// profile's pool has none.
func (t *Tx) TakeProfile(a Assignment, now time.Time, cooldown time.Duration, profile string) (Assignment, error) {
	a, err := a.normalize()
	if err != nil {
		return a, err
	}
	if prev, ok, err := t.Assignment(a.Key); err != nil || ok {
		return prev, err
	}
	a.Profile = profile
	dev, ip, cooling, err := t.profilePick(now, cooldown, profile, 1)
	if err != nil {
		return a, err
	}
	if !ip.IsValid() {
		return a, fmt.Errorf("%w in profile %s (%d cooling)", ErrNoFreeAddress, profile, cooling)
	}
	return t.assign(a, dev, ip, now)
}

// ProfileAvailableAtLeast is AvailableAtLeast among profile's ENIs.
func (t *Tx) ProfileAvailableAtLeast(n int, now time.Time, cooldown time.Duration, profile string) (bool, error) {
	if n <= 0 {
		return true, nil
	}
	_, ip, _, err := t.profilePick(now, cooldown, profile, n)
	if err == errEnough || err == nil && n == 1 && ip.IsValid() {
		return true, nil
	}
	return false, err
}

var errEnough = errors.New("enough usable addresses")

// profilePick walks profile's usable addresses in pick order. With want 1 it
// returns the first; with more it returns errEnough once it has seen want.
func (t *Tx) profilePick(now time.Time, cooldown time.Duration, profile string, want int) (dev int, ip netip.Addr, cooling int, err error) {
	recs, err := t.eniRecords()
	if err != nil {
		return 0, ip, 0, err
	}
	seen := 0
	for _, r := range recs {
		if r.Profile != profile || !usableENI(r) {
			continue
		}
		blocks, err := t.eniBlocks(r.ID)
		if err != nil {
			return 0, ip, 0, err
		}
		for _, b := range blocks {
			if b.Releasing {
				continue
			}
			addrs, err := t.blockAddrs(r.ID, b.CIDR)
			if err != nil {
				return 0, ip, 0, err
			}
			for _, ad := range addrs {
				st := ad.Rec.State
				if st != pool.Free && st != pool.Cooling {
					continue
				}
				if !pool.Usable(pool.Addr{State: st, Since: ad.Rec.Since}, now, cooldown) {
					cooling++
					continue
				}
				if seen++; want == 1 {
					return r.DeviceIndex, ad.IP, cooling, nil
				}
				if seen >= want {
					return 0, ip, cooling, errEnough
				}
			}
		}
	}
	return 0, ip, cooling, nil
}
