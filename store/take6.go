package store

import (
	"fmt"
	"net/netip"
	"time"

	"vpc-cni/pool"
)

// extras are the addresses a take gives beside the VPC IPv4: the VPC IPv6
// and the egress address, chosen before anything is written.
type extras struct {
	v6, egress netip.Addr
	eni        string // the /80's ENI
}

// takeFamilies gives the pod interface want.Key one address of each family
// the mode gives pods (cfg: IPv4 from the pool, IPv6 from the /80) and its
// egress address, or none of them: the IPv6 and egress choices are made
// first, without writing, so a failure leaves nothing taken. Idempotent: a
// key that holds an assignment gets it back unchanged.
func (t *Tx) takeFamilies(want Assignment, now time.Time, cfg pool.Config) (Assignment, error) {
	a, err := want.normalize()
	if err != nil {
		return a, err
	}
	if prev, ok, err := t.Assignment(a.Key); err != nil || ok {
		return prev, err
	}
	if !cfg.PodIPv4() && !cfg.PodIPv6() {
		return a, fmt.Errorf("neither IPv4 nor IPv6 enabled for pods: %w", ErrInvalid)
	}
	if cfg.Profile.NeedsIPv4() && !cfg.PodIPv4() {
		return a, fmt.Errorf("profile %s: a network profile's pods take an IPv4 of its ENIs, and pods take no IPv4: %w", cfg.Profile, ErrInvalid)
	}
	a.Profile = cfg.Profile
	x, err := t.pickExtras(now, cfg)
	if err != nil {
		return a, err
	}
	if cfg.PodIPv4() {
		if a, err = t.Take(a, now, cfg); err != nil {
			return a, err
		}
	} else {
		a.ENIID, a.DeviceIndex, a.Time = x.eni, 0, now // the /80 is on the primary ENI
	}
	if !x.v6.IsValid() && !x.egress.IsValid() {
		return a, nil
	}
	a.IPv6, a.EgressIP = x.v6, x.egress
	if err := t.holdExtras(a, now); err != nil {
		return a, err
	}
	return a, t.putJSON(bAssignments, []byte(a.Key), a)
}

func (t *Tx) pickExtras(now time.Time, cfg pool.Config) (x extras, err error) {
	if cfg.PodIPv6() {
		p, _, err := t.IPv6Pool()
		if err != nil {
			return x, err
		}
		if !p.Prefix.IsValid() {
			return x, fmt.Errorf("%w: no IPv6 /80 on the primary ENI yet (a reconcile pass assigns one)", ErrNoFreeAddress)
		}
		ip, ok, err := t.pick(heldVPC, p.Prefix, now, cfg.Cooldown, pool.PickIPv6)
		if err != nil {
			return x, err
		}
		if !ok {
			return x, fmt.Errorf("%w: every /128 of %s is assigned or cooling", ErrNoFreeAddress, p.Prefix)
		}
		x.v6, x.eni = ip, p.ENIID
	}
	if r, ok := cfg.EgressRange(); ok {
		ip, ok, err := t.pick(heldEgress, r, now, 0, pool.PickEgress)
		if err != nil {
			return x, err
		}
		if !ok {
			return x, fmt.Errorf("%w: every egress address of %s is assigned", ErrNoFreeAddress, r)
		}
		x.egress = ip
	}
	return x, nil
}

func (t *Tx) holdExtras(a Assignment, now time.Time) error {
	if a.IPv6.IsValid() {
		h := HeldAddr{Held: pool.Held{IP: a.IPv6, State: pool.Assigned, Since: now}, Owner: a.Key}
		if err := t.putHeld(heldVPC, h); err != nil {
			return err
		}
	}
	if a.EgressIP.IsValid() {
		h := HeldAddr{Held: pool.Held{IP: a.EgressIP, State: pool.Assigned, Since: now}, Owner: a.Key}
		return t.putHeld(heldEgress, h)
	}
	return nil
}

// giveIPv6 is Give's IPv6 part: the /128 cools since now, the egress
// address is forgotten (free at once). Records another key holds, or none,
// are left alone.
func (t *Tx) giveIPv6(a Assignment, now time.Time) error {
	for _, g := range []struct {
		kind byte
		ip   netip.Addr
	}{{heldVPC, a.IPv6}, {heldEgress, a.EgressIP}} {
		if !g.ip.IsValid() {
			continue
		}
		h, ok, err := t.heldOne(g.kind, g.ip)
		if err != nil || !ok || h.State != pool.Assigned || h.Owner != a.Key {
			if err != nil {
				return err
			}
			continue
		}
		if g.kind == heldEgress {
			b, _ := t.v6()
			if err := b.Delete(heldKey(g.kind, g.ip)); err != nil {
				return err
			}
			continue
		}
		h.State, h.Since, h.Owner = pool.Cooling, now, ""
		if err := t.putHeld(g.kind, h); err != nil {
			return err
		}
	}
	return nil
}

func (t *Tx) heldOne(kind byte, ip netip.Addr) (HeldAddr, bool, error) {
	b, err := t.v6()
	if err != nil || b == nil {
		return HeldAddr{}, false, err
	}
	k := heldKey(kind, ip)
	v := b.Get(k)
	if v == nil {
		return HeldAddr{}, false, nil
	}
	h, err := decodeHeld(k, v)
	return h, true, err
}

// checkIPv6 is Check's IPv6 part: every held /128 and egress address that
// is assigned belongs to the assignment holding it, and the reverse.
func (t *Tx) checkIPv6(report func(string, ...any)) {
	as, err := t.Assignments()
	if err != nil {
		report("assignments: %v", err)
		return
	}
	for _, kind := range []byte{heldVPC, heldEgress} {
		want := map[netip.Addr]string{}
		for _, a := range as {
			ip := a.IPv6
			if kind == heldEgress {
				ip = a.EgressIP
			}
			if !ip.IsValid() {
				continue
			}
			if other, dup := want[ip]; dup {
				report("address %s assigned to both %s and %s", ip, other, a.Key)
			}
			want[ip] = a.Key
		}
		hs, err := t.held(kind, netip.Prefix{})
		if err != nil {
			report("%v", err)
			continue
		}
		for _, h := range hs {
			if h.State == pool.Assigned && want[h.IP] != h.Owner {
				report("address %s is held for %q but its assignment is %q", h.IP, h.Owner, want[h.IP])
			}
			if h.State == pool.Assigned {
				delete(want, h.IP)
			}
		}
		for ip, key := range want {
			report("assignment %s holds %s but the address is not held for it", key, ip)
		}
	}
}
