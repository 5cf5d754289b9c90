package store

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	"vpc-cni/pool"
)

var the80 = netip.MustParsePrefix("fd00:ec2:0:1:2::/80")

func v6only() pool.Config {
	c := pool.Defaults()
	c.IPv6, c.IPv4Off, c.V4Egress, c.PrefixDelegation = true, true, true, true
	return c
}

func dualStack() pool.Config {
	c := pool.Defaults()
	c.IPv6, c.V4Egress = true, true // V4Egress does not apply to dual-stack pods
	return c
}

func takeV6(t *testing.T, s *Store, key string, at time.Time, c pool.Config) (PodTake, error) {
	t.Helper()
	return s.TakeForPod(Assignment{Key: key}, at, PodPool{Config: c}, false)
}

func takePod(t *testing.T, s *Store, key string, at time.Time, c pool.Config) Assignment {
	t.Helper()
	res, err := takeV6(t, s, key, at, c)
	if err != nil {
		t.Fatalf("take %s: %v", key, err)
	}
	return res.Assignment
}

func give(t *testing.T, s *Store, key string, at time.Time) Assignment {
	t.Helper()
	var a Assignment
	update(t, s, func(tx *Tx) error {
		var ok bool
		var err error
		if a, ok, err = tx.Give(key, at); err == nil && !ok {
			t.Fatalf("give %s: no assignment", key)
		}
		return err
	})
	return a
}

func checked(t *testing.T, s *Store) {
	t.Helper()
	view(t, s, func(tx *Tx) error { return tx.Check() })
}

func putPool(t *testing.T, s *Store, p netip.Prefix) {
	t.Helper()
	update(t, s, func(tx *Tx) error {
		return tx.PutIPv6Pool(IPv6Pool{ENIID: "eni-0000", Prefix: p, Ours: []netip.Prefix{p}, UpdatedAt: t0})
	})
}

func TestIPv6OnlyTakeAndGive(t *testing.T) {
	s := newStore(t)
	c := v6only()
	res, err := takeV6(t, s, "c1/eth0", t0, c)
	if !errors.Is(err, ErrNoFreeAddress) || !res.Low {
		t.Fatalf("no /80 yet: %+v %v", res, err)
	}
	view(t, s, func(tx *Tx) error {
		if as, _ := tx.Assignments(); len(as) != 0 {
			t.Fatalf("a failed take left %+v", as)
		}
		return nil
	})
	putPool(t, s, the80)
	a := takePod(t, s, "c1/eth0", t0, c)
	if a.IP.IsValid() || a.IPv6 != netip.MustParseAddr("fd00:ec2:0:1:2::1") ||
		a.EgressIP != netip.MustParseAddr("169.254.172.2") || a.ENIID != "eni-0000" {
		t.Fatalf("first pod: %+v", a)
	}
	if again := takePod(t, s, "c1/eth0", t0.Add(time.Second), c); again != a {
		t.Fatalf("not idempotent: %+v then %+v", a, again)
	}
	b := takePod(t, s, "c2/eth0", t0, c)
	if b.IPv6 != netip.MustParseAddr("fd00:ec2:0:1:2::2") || b.EgressIP != netip.MustParseAddr("169.254.172.3") {
		t.Fatalf("second pod: %+v", b)
	}
	if got := give(t, s, "c1/eth0", t0.Add(time.Minute)); got.IPv6 != a.IPv6 {
		t.Fatalf("give returned %+v", got)
	}
	checked(t, s)
	// ::1 cools; its egress address is free at once.
	d := takePod(t, s, "c3/eth0", t0.Add(time.Minute+time.Second), c)
	if d.IPv6 != netip.MustParseAddr("fd00:ec2:0:1:2::3") || d.EgressIP != a.EgressIP {
		t.Fatalf("third pod while ::1 cools: %+v", d)
	}
	e := takePod(t, s, "c4/eth0", t0.Add(time.Minute+c.Cooldown), c)
	if e.IPv6 != a.IPv6 {
		t.Fatalf("fourth pod after the cooldown: %+v", e)
	}
	view(t, s, func(tx *Tx) error {
		f, err := tx.IPv6Figures(t0.Add(2*time.Minute), c.Cooldown)
		if f != (IPv6Figures{ENIID: "eni-0000", Prefix: the80, Assigned: 3, Egress: 3}) {
			t.Fatalf("figures %+v", f)
		}
		return err
	})
	checked(t, s)
}

// A dual-stack take gives one IPv4 and one IPv6 in one transaction, or
// neither.
func TestDualStackTakeIsAllOrNothing(t *testing.T) {
	s := newStore(t)
	c := dualStack()
	update(t, s, func(tx *Tx) error { return tx.PutENI(testENI(0, true, secondaries("100.64.0.10")...)) })
	if _, err := takeV6(t, s, "c1/eth0", t0, c); !errors.Is(err, ErrNoFreeAddress) {
		t.Fatalf("no /80: %v", err)
	}
	view(t, s, func(tx *Tx) error {
		if ok, _ := tx.AvailableAtLeast(1, t0, pool.Config{}); !ok {
			t.Fatal("the IPv4 was taken although the IPv6 was not")
		}
		return nil
	})
	putPool(t, s, the80)
	a := takePod(t, s, "c1/eth0", t0, c)
	if a.IP != netip.MustParseAddr("100.64.0.10") || a.IPv6 != netip.MustParseAddr("fd00:ec2:0:1:2::1") || a.EgressIP.IsValid() {
		t.Fatalf("dual-stack pod: %+v", a)
	}
	if _, err := takeV6(t, s, "c2/eth0", t0, c); !errors.Is(err, ErrNoFreeAddress) {
		t.Fatalf("IPv4 pool empty: %v", err)
	}
	view(t, s, func(tx *Tx) error {
		if f, _ := tx.IPv6Figures(t0, c.Cooldown); f.Assigned != 1 {
			t.Fatalf("an IPv6 was held for a failed take: %+v", f)
		}
		return nil
	})
	got := give(t, s, "c1/eth0", t0.Add(time.Second))
	if got.IP != a.IP || got.IPv6 != a.IPv6 {
		t.Fatalf("give: %+v", got)
	}
	view(t, s, func(tx *Tx) error {
		f, _ := tx.IPv6Figures(t0.Add(time.Second), c.Cooldown)
		snap, err := tx.Snapshot()
		if f.Assigned != 0 || f.Cooling != 1 || snap.ENIs[0].Blocks[0].Addrs[0].State != pool.Cooling {
			t.Fatalf("after give: %+v %+v", f, snap.ENIs[0].Blocks[0].Addrs[0])
		}
		return err
	})
	checked(t, s)
}

func TestIPv4PodsGetV6EgressWhenEnabled(t *testing.T) {
	s := newStore(t)
	c := pool.Defaults()
	c.V6Egress = true
	update(t, s, func(tx *Tx) error { return tx.PutENI(testENI(0, true, secondaries("100.64.0.10", "100.64.0.11")...)) })
	a := takePod(t, s, "c1/eth0", t0, c)
	if a.IP != netip.MustParseAddr("100.64.0.10") || a.IPv6.IsValid() || a.EgressIP != netip.MustParseAddr("fd00::ac:2") {
		t.Fatalf("%+v", a)
	}
	c.V6Egress = false
	if b := takePod(t, s, "c2/eth0", t0, c); b.EgressIP.IsValid() {
		t.Fatalf("egress without ENABLE_V6_EGRESS: %+v", b)
	}
	checked(t, s)
}

// The /80 is replaced by the same /80 (EC2 handing it back): the /128s
// pods kept are skipped; a different /80 starts at its ::1; pods of the old
// one keep their records until deleted.
func TestReplacedPrefixNeverHandsOutAnAddressTwice(t *testing.T) {
	s := newStore(t)
	c := v6only()
	putPool(t, s, the80)
	old := []Assignment{takePod(t, s, "c1/eth0", t0, c), takePod(t, s, "c2/eth0", t0, c)}
	putPool(t, s, the80) // replaced by itself
	if a := takePod(t, s, "c3/eth0", t0, c); a.IPv6 == old[0].IPv6 || a.IPv6 == old[1].IPv6 {
		t.Fatalf("handed out %s twice", a.IPv6)
	}
	other := netip.MustParsePrefix("fd00:ec2:0:1:9::/80")
	putPool(t, s, other)
	if a := takePod(t, s, "c4/eth0", t0, c); a.IPv6 != netip.MustParseAddr("fd00:ec2:0:1:9::1") {
		t.Fatalf("new /80: %+v", a)
	}
	view(t, s, func(tx *Tx) error {
		f, _ := tx.IPv6Figures(t0, c.Cooldown)
		in, err := tx.IPv6PrefixesInUse([]netip.Prefix{the80, other, netip.MustParsePrefix("fd00:ec2:0:1:7::/80")})
		if f.Assigned != 4 || f.Stale != 3 || len(in) != 2 {
			t.Fatalf("figures %+v, in use %v", f, in)
		}
		return err
	})
	give(t, s, "c1/eth0", t0.Add(time.Second))
	checked(t, s)
	update(t, s, func(tx *Tx) error {
		n, err := tx.PruneIPv6(t0.Add(time.Second+c.Cooldown), c.Cooldown)
		if n != 1 {
			t.Fatalf("pruned %d", n)
		}
		return err
	})
	checked(t, s)
}

// A file written before the IPv6 bucket existed reads as an empty pool.
func TestIPv6PoolAbsentReadsEmpty(t *testing.T) {
	s := newStore(t)
	update(t, s, func(tx *Tx) error { return tx.PutENI(testENI(0, true)) })
	view(t, s, func(tx *Tx) error {
		p, ok, err := tx.IPv6Pool()
		f, _ := tx.IPv6Figures(t0, 0)
		if ok || p.Prefix.IsValid() || f != (IPv6Figures{}) {
			t.Fatalf("%+v %v %+v", p, ok, f)
		}
		return err
	})
	update(t, s, func(tx *Tx) error {
		if err := tx.PutIPv6Pool(IPv6Pool{Prefix: netip.MustParsePrefix("100.64.0.0/28")}); !errors.Is(err, ErrInvalid) {
			t.Fatalf("IPv4 prefix accepted: %v", err)
		}
		return nil
	})
}
