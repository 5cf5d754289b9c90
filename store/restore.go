package store

import (
	"fmt"
	"time"

	"vpc-cni/pool"
)

// Restore records a pod's assignment of a known address, as
// `vpcctl state rebuild` recovers it from the kernel: the address must be
// in the pool and not assigned to another key. It keeps a.Time when set.
// An IPv6 (a /128 of the pool's /80) and an egress address are restored
// with it (restoreIPv6); an IPv6-only pod has no IPv4.
func (t *Tx) Restore(a Assignment, now time.Time) (Assignment, error) {
	a, err := a.normalize()
	if err != nil {
		return a, err
	}
	if !a.IP.IsValid() {
		return t.restoreIPv6(a, now)
	}
	out, err := t.restore4(a, now)
	if err != nil || (!a.IPv6.IsValid() && !a.EgressIP.IsValid()) {
		return out, err
	}
	out.IPv6, out.EgressIP = a.IPv6, a.EgressIP
	return t.restoreIPv6(out, now)
}

func (t *Tx) restore4(a Assignment, now time.Time) (Assignment, error) {
	rec, ok, err := t.addr(a.IP)
	if err != nil {
		return a, err
	}
	if !ok {
		return a, fmt.Errorf("%s is not in the pool (EC2 does not list it on this node's ENIs): %w", a.IP, ErrNotFound)
	}
	if rec.State == pool.Assigned {
		if rec.Owner == a.Key {
			return a, nil
		}
		return a, fmt.Errorf("%s is already assigned to %s: %w", a.IP, rec.Owner, ErrAssigned)
	}
	e, err := t.mustENI(rec.ENIID)
	if err != nil {
		return a, err
	}
	when := a.Time
	a.Profile = e.Profile // the pool the address is in: the pod's profile, as its ADD recorded it
	out, err := t.assign(a, e.DeviceIndex, a.IP, now)
	if err == nil && !when.IsZero() {
		out.Time = when
		err = t.putJSON(bAssignments, []byte(out.Key), out)
	}
	return out, err
}
