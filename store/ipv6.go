package store

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"vpc-cni/pool"
)

// The IPv6 pool and the egress addresses live in their own bucket, created
// by the first write that needs it (a file without it reads as an empty
// pool), so the version 1 layout is unchanged:
//
//	"pool"            -> IPv6Pool (JSON)
//	'a' ipKey(/128)   -> held record: a pod's VPC IPv6, assigned or cooling
//	'e' ipKey(addr)   -> held record: a pod's v4if0 or v6if0 egress address
//
// A /80 holds 2^48 addresses: only the held ones are stored, keyed by
// address, whichever /80 they came from, so a /80 EC2 hands back after it
// was removed still skips the /128s pods kept from it.
var (
	bIPv6     = []byte("ipv6")
	kIPv6Pool = []byte("pool")
)

const (
	heldVPC    = 'a'
	heldEgress = 'e'
)

// IPv6Pool is the IPv6 pool's record: the /80 pods take from and the /80s
// vpc-cni assigned itself (the only ones it releases).
type IPv6Pool struct {
	ENIID     string         `json:"eniId"`
	Prefix    netip.Prefix   `json:"prefix"` // zero before a pass gave the ENI one
	Ours      []netip.Prefix `json:"ours,omitempty"`
	UpdatedAt time.Time      `json:"updatedAt"`
}

// HeldAddr is one held IPv6 (or egress) address with its owner.
type HeldAddr struct {
	pool.Held
	Owner string `json:"owner,omitempty"` // assignment key when Assigned
}

// v6 returns the bucket, creating it in a write transaction; nil when a read
// finds none (an empty pool).
func (t *Tx) v6() (*bolt.Bucket, error) {
	if b := t.tx.Bucket(bIPv6); b != nil || !t.tx.Writable() {
		return b, nil
	}
	return t.tx.CreateBucket(bIPv6)
}

// IPv6Pool returns the IPv6 pool's record; ok is false before a pass wrote one.
func (t *Tx) IPv6Pool() (p IPv6Pool, ok bool, err error) {
	b, err := t.v6()
	if err != nil || b == nil {
		return p, false, err
	}
	raw := b.Get(kIPv6Pool)
	if raw == nil {
		return p, false, nil
	}
	if err := jsonValue(raw, &p); err != nil {
		return p, true, fmt.Errorf("%s: %s/%s: %w", t.path, bIPv6, kIPv6Pool, err)
	}
	return p, true, nil
}

// PutIPv6Pool replaces the IPv6 pool's record (the pass's commit). The
// held /128s stay: pods keep addresses from a replaced /80 until deleted.
func (t *Tx) PutIPv6Pool(p IPv6Pool) error {
	if p.Prefix.IsValid() && (!p.Prefix.Addr().Is6() || p.Prefix.Bits() > 120) {
		return fmt.Errorf("IPv6 pool prefix %s: %w", p.Prefix, ErrInvalid)
	}
	b, err := t.v6()
	if err != nil {
		return err
	}
	p.Ours = slices.Clone(p.Ours) // oldest first
	raw, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return b.Put(kIPv6Pool, raw)
}

func heldKey(kind byte, ip netip.Addr) []byte { return append([]byte{kind}, ipKey(ip)...) }

// Layout: [v][state][since 8][owner ...].
func encodeHeld(h HeldAddr) ([]byte, error) {
	st, err := stateByte(h.State)
	if err != nil {
		return nil, err
	}
	return append(appendTime([]byte{recordV1, st}, h.Since), h.Owner...), nil
}

func decodeHeld(k, v []byte) (HeldAddr, error) {
	var h HeldAddr
	ip, err := parseIPKey(k[1:])
	if err != nil {
		return h, err
	}
	if len(v) < 10 || v[0] != recordV1 {
		return h, fmt.Errorf("bad held address record %x", v)
	}
	h.IP, h.Since, h.Owner = ip, readTime(v[2:10]), string(v[10:])
	h.State, err = byteState(v[1])
	return h, err
}

// held lists the held addresses of kind inside r (all of kind when r is
// zero), ascending.
func (t *Tx) held(kind byte, r netip.Prefix) ([]HeldAddr, error) {
	b, err := t.v6()
	if err != nil || b == nil {
		return nil, err
	}
	start := []byte{kind}
	if r.IsValid() {
		start = heldKey(kind, r.Masked().Addr())
	}
	var out []HeldAddr
	c := b.Cursor()
	for k, v := c.Seek(start); k != nil && k[0] == kind; k, v = c.Next() {
		h, err := decodeHeld(k, v)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", t.path, bIPv6, err)
		}
		if r.IsValid() && !r.Contains(h.IP) {
			break
		}
		out = append(out, h)
	}
	return out, nil
}

// IPv6Held lists the pods' held VPC IPv6 addresses, ascending.
func (t *Tx) IPv6Held() ([]HeldAddr, error) { return t.held(heldVPC, netip.Prefix{}) }

// EgressHeld lists the pods' egress addresses, ascending.
func (t *Tx) EgressHeld() ([]HeldAddr, error) { return t.held(heldEgress, netip.Prefix{}) }

func (t *Tx) putHeld(kind byte, h HeldAddr) error {
	b, err := t.v6()
	if err != nil {
		return err
	}
	raw, err := encodeHeld(h)
	if err != nil {
		return err
	}
	return b.Put(heldKey(kind, h.IP), raw)
}

// pick chooses the lowest free address of kind in r with choose (a pool
// rule), reading only the held addresses of r.
func (t *Tx) pick(kind byte, r netip.Prefix, now time.Time, cooldown time.Duration,
	choose func(netip.Prefix, []pool.Held, time.Time, time.Duration) (netip.Addr, bool)) (netip.Addr, bool, error) {
	hs, err := t.held(kind, r)
	if err != nil {
		return netip.Addr{}, false, err
	}
	plain := make([]pool.Held, len(hs))
	for i, h := range hs {
		plain[i] = h.Held
	}
	ip, ok := choose(r, plain, now, cooldown)
	return ip, ok, nil
}

// PruneIPv6 forgets VPC /128s whose cooldown has passed (they are free
// again either way), so the bucket holds about as many records as pods.
func (t *Tx) PruneIPv6(now time.Time, cooldown time.Duration) (int, error) {
	hs, err := t.held(heldVPC, netip.Prefix{})
	if err != nil || len(hs) == 0 {
		return 0, err
	}
	b, _ := t.v6()
	n := 0
	for _, h := range hs {
		if h.State == pool.Cooling && pool.Usable(pool.Addr{State: h.State, Since: h.Since}, now, cooldown) {
			if err := b.Delete(heldKey(heldVPC, h.IP)); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}

// IPv6Figures is what `pool status` shows of the IPv6 pool.
type IPv6Figures struct {
	ENIID    string       `json:"eniId,omitempty"`
	Prefix   netip.Prefix `json:"prefix"`   // the /80 pods take from; zero: none yet
	Assigned int          `json:"assigned"` // /128s pods hold
	Cooling  int          `json:"cooling"`  // freed /128s still cooling
	// Stale: /128s pods hold from a /80 the ENI no longer has (kept until
	// the pods are deleted).
	Stale  int `json:"stale"`
	Egress int `json:"egressAssigned"` // v4if0/v6if0 addresses pods hold
}

// IPv6Figures counts the IPv6 pool now.
func (t *Tx) IPv6Figures(now time.Time, cooldown time.Duration) (IPv6Figures, error) {
	var f IPv6Figures
	p, _, err := t.IPv6Pool()
	if err != nil {
		return f, err
	}
	f.ENIID, f.Prefix = p.ENIID, p.Prefix
	hs, err := t.IPv6Held()
	if err != nil {
		return f, err
	}
	for _, h := range hs {
		switch {
		case h.State == pool.Assigned:
			f.Assigned++
			if !p.Prefix.Contains(h.IP) {
				f.Stale++
			}
		case !pool.Usable(pool.Addr{State: h.State, Since: h.Since}, now, cooldown):
			f.Cooling++
		}
	}
	eg, err := t.EgressHeld()
	f.Egress = len(eg)
	return f, err
}

// IPv6PrefixesInUse lists the prefixes of ps in which a pod holds a /128.
func (t *Tx) IPv6PrefixesInUse(ps []netip.Prefix) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, p := range ps {
		hs, err := t.held(heldVPC, p)
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(hs, func(h HeldAddr) bool { return h.State == pool.Assigned }) {
			out = append(out, p)
		}
	}
	return out, nil
}
