package store

import (
	"fmt"
	"time"

	"vpc-cni/pool"
)

// restoreIPv6 is Restore's part for a pod's VPC IPv6 and egress address:
// the /128 must be in the pool's /80, and neither address held for another
// key; both are then held for a.Key and the assignment written. An
// IPv6-only pod's assignment names the /80's ENI (the primary).
func (t *Tx) restoreIPv6(a Assignment, now time.Time) (Assignment, error) {
	if a.IPv6.IsValid() {
		p, _, err := t.IPv6Pool()
		if err != nil {
			return a, err
		}
		if !p.Prefix.Contains(a.IPv6) {
			return a, fmt.Errorf("%s is not in the node's IPv6 /80 (%v): %w", a.IPv6, p.Prefix, ErrNotFound)
		}
		if !a.IP.IsValid() {
			a.ENIID, a.DeviceIndex = p.ENIID, 0
		}
	}
	for _, h := range []struct {
		kind byte
		ip   HeldAddr
	}{{heldVPC, HeldAddr{Held: pool.Held{IP: a.IPv6}}}, {heldEgress, HeldAddr{Held: pool.Held{IP: a.EgressIP}}}} {
		if !h.ip.IP.IsValid() {
			continue
		}
		cur, ok, err := t.heldOne(h.kind, h.ip.IP)
		if err != nil {
			return a, err
		}
		if ok && cur.State == pool.Assigned && cur.Owner != a.Key {
			return a, fmt.Errorf("%s is already assigned to %s: %w", h.ip.IP, cur.Owner, ErrAssigned)
		}
	}
	if a.Time.IsZero() {
		a.Time = now
	}
	if err := t.holdExtras(a, now); err != nil {
		return a, err
	}
	return a, t.putJSON(bAssignments, []byte(a.Key), a)
}
