package status

import (
	"time"

	"vpc-cni/pool"
	"vpc-cni/store"
)

// loadIPv6 reads the IPv6 pool's figures when pods take IPv6 or egress
// addresses, or a pool is recorded (nil otherwise: IPv4 only).
func loadIPv6(st *store.Store, c pool.Config, now time.Time) (*IPv6PoolStatus, error) {
	var f store.IPv6Figures
	err := st.View(func(tx *store.Tx) (err error) { f, err = tx.IPv6Figures(now, c.Cooldown); return err })
	if err != nil {
		return nil, err
	}
	egress, hasEgress := c.EgressRange()
	if !c.PodIPv6() && !hasEgress && !f.Prefix.IsValid() && f.Egress == 0 {
		return nil, nil
	}
	s := &IPv6PoolStatus{Mode: c.Family(), ENIID: f.ENIID, Assigned: f.Assigned, Cooling: f.Cooling, Stale: f.Stale,
		EgressAssigned: f.Egress}
	if f.Prefix.IsValid() {
		s.Prefix = f.Prefix.String()
	}
	if hasEgress {
		s.EgressRange = egress.String()
	}
	return s, nil
}
