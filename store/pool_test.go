package store

import (
	"errors"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"vpc-cni/pool"
)

func TestPutENISnapshotRoundTrip(t *testing.T) {
	s := newStore(t)
	e0 := testENI(0, true, secondaries("100.64.0.20", "100.64.0.10")...)
	e2 := testENI(2, false, prefixBlock("100.64.3.16/28"), prefixBlock("100.64.3.0/28"))
	e1 := testENI(1, true, secondaries("100.64.1.5")...)
	e1.Blocks[0].Addrs[0] = pool.Addr{IP: e1.Blocks[0].Addrs[0].IP, State: pool.Cooling, Since: t0}
	update(t, s, func(tx *Tx) error {
		for _, e := range []pool.ENI{e2, e0, e1} {
			if err := tx.PutENI(e); err != nil {
				return err
			}
		}
		return tx.PutPoolTimers(pool.DefaultPool, pool.Timers{ExcessSince: t0, GrowBlockedUntil: t0.Add(time.Minute), GrowBlockedWhy: "subnet full"})
	})
	var snap pool.Snapshot
	view(t, s, func(tx *Tx) (err error) { snap, err = tx.Snapshot(); return err })

	// Expected: ENIs by device index, blocks and addresses ascending.
	e0.Blocks[0], e0.Blocks[1] = e0.Blocks[1], e0.Blocks[0]
	e2.Blocks[0], e2.Blocks[1] = e2.Blocks[1], e2.Blocks[0]
	want := []pool.ENI{e0, e1, e2}
	if len(snap.ENIs) != len(want) {
		t.Fatalf("got %d ENIs", len(snap.ENIs))
	}
	for i := range want {
		if got := normENI(snap.ENIs[i]); !reflect.DeepEqual(got, normENI(want[i])) {
			t.Errorf("ENI %d:\n got %+v\nwant %+v", i, got, normENI(want[i]))
		}
	}
	if !snap.ExcessSince.Equal(t0) || !snap.GrowBlockedUntil.Equal(t0.Add(time.Minute)) || snap.GrowBlockedWhy != "subnet full" {
		t.Errorf("pool meta %v %v %q", snap.ExcessSince, snap.GrowBlockedUntil, snap.GrowBlockedWhy)
	}
	view(t, s, func(tx *Tx) error {
		got, ok, err := tx.ENI(e1.ID)
		if !ok || !reflect.DeepEqual(normENI(got), normENI(e1)) {
			t.Errorf("ENI(%s) = %+v %v", e1.ID, got, ok)
		}
		return errors.Join(err, tx.Check())
	})
}

func TestPutENIReplacesBlocksButKeepsPodState(t *testing.T) {
	s := newStore(t)
	var held Assignment
	update(t, s, func(tx *Tx) error {
		if err := tx.PutENI(testENI(1, true, seqBlocks("100.64.1.1", 4)...)); err != nil {
			return err
		}
		held = mustTake(t, tx, "pod/eth0", t0, 0)
		_, _, err := tx.Give(mustTake(t, tx, "gone/eth0", t0, 0).Key, t0)
		return err
	})
	// A stale caller says everything is free, drops .4 and adds .9.
	stale := testENI(1, true, append(seqBlocks("100.64.1.1", 3), secondaries("100.64.1.9")...)...)
	stale.MAC = "0a:00:00:00:00:99"
	update(t, s, func(tx *Tx) error { return tx.PutENI(stale) })
	view(t, s, func(tx *Tx) error {
		e, _, err := tx.ENI(stale.ID)
		if err != nil {
			return err
		}
		if e.MAC != stale.MAC || len(e.Blocks) != 4 || e.Blocks[3].CIDR.Addr().String() != "100.64.1.9" {
			t.Errorf("ENI not replaced: %+v", e)
		}
		states := []pool.State{pool.Assigned, pool.Cooling, pool.Free, pool.Free}
		for i, b := range e.Blocks {
			if b.Addrs[0].State != states[i] {
				t.Errorf("%s state %s, want %s", b.CIDR, b.Addrs[0].State, states[i])
			}
		}
		if e.Blocks[0].Addrs[0].Owner != held.Key {
			t.Errorf("owner %q", e.Blocks[0].Addrs[0].Owner)
		}
		return tx.Check()
	})
}

func TestPutENIRejectsBadInput(t *testing.T) {
	s := newStore(t)
	update(t, s, func(tx *Tx) error { return tx.PutENI(testENI(0, true, secondaries("100.64.0.1")...)) })
	outside := testENI(1, true, prefixBlock("100.64.1.0/28"))
	outside.Blocks[0].Addrs[0].IP = netip.MustParseAddr("100.64.2.1")
	unaligned := testENI(1, true, prefixBlock("100.64.1.0/28"))
	unaligned.Blocks[0].CIDR = netip.MustParsePrefix("100.64.1.1/28")
	overlap := testENI(1, true, prefixBlock("100.64.1.0/28"), secondaries("100.64.1.3")[0])
	overlap.Blocks[0].Addrs = overlap.Blocks[0].Addrs[:2]
	badState := testENI(1, true, secondaries("100.64.1.1")...)
	badState.Blocks[0].Addrs[0].State = "weird"
	cases := map[string]struct {
		eni  pool.ENI
		want error
	}{
		"no id":              {pool.ENI{}, ErrInvalid},
		"negative index":     {testENI(-1, true), ErrInvalid},
		"address outside":    {outside, ErrInvalid},
		"unaligned prefix":   {unaligned, ErrInvalid},
		"unknown state":      {badState, ErrInvalid},
		"overlapping blocks": {overlap, ErrExists},
		"other ENI's addr":   {testENI(1, true, secondaries("100.64.0.1")...), ErrExists},
	}
	for name, c := range cases {
		err := s.Update(func(tx *Tx) error { return tx.PutENI(c.eni) })
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
}

func TestDeleteENI(t *testing.T) {
	s := newStore(t)
	update(t, s, func(tx *Tx) error {
		for _, e := range []pool.ENI{testENI(0, true, seqBlocks("100.64.0.1", 2)...), testENI(1, true, prefixBlock("100.64.1.0/28"))} {
			if err := tx.PutENI(e); err != nil {
				return err
			}
		}
		return errors.Join(tx.DeleteENI("eni-0001"), tx.DeleteENI("eni-unknown"))
	})
	view(t, s, func(tx *Tx) error {
		snap, err := tx.Snapshot()
		if len(snap.ENIs) != 1 || snap.ENIs[0].ID != "eni-0000" {
			t.Errorf("after delete: %+v", snap.ENIs)
		}
		return errors.Join(err, tx.Check())
	})
	// Its addresses may now be used by another ENI.
	update(t, s, func(tx *Tx) error { return tx.PutENI(testENI(2, true, prefixBlock("100.64.1.0/28"))) })
}

func TestAddAndRemoveBlocks(t *testing.T) {
	s := newStore(t)
	update(t, s, func(tx *Tx) error {
		if err := tx.PutENI(testENI(1, true, secondaries("100.64.1.1")...)); err != nil {
			return err
		}
		return tx.AddBlocks("eni-0001", []pool.Block{prefixBlock("100.64.1.16/28"), secondaries("100.64.1.2")[0]})
	})
	for name, c := range map[string]struct {
		eni    string
		blocks []pool.Block
		want   error
	}{
		"existing block":   {"eni-0001", secondaries("100.64.1.2"), ErrExists},
		"inside a prefix":  {"eni-0001", secondaries("100.64.1.17"), ErrExists},
		"unknown ENI":      {"eni-none", secondaries("100.64.9.1"), ErrNotFound},
		"address outside ": {"eni-0001", []pool.Block{{CIDR: netip.MustParsePrefix("100.64.1.3/32"), Addrs: []pool.Addr{{IP: netip.MustParseAddr("100.64.1.4"), State: pool.Free}}}}, ErrInvalid},
	} {
		if err := s.Update(func(tx *Tx) error { return tx.AddBlocks(c.eni, c.blocks) }); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	view(t, s, func(tx *Tx) error {
		e, _, err := tx.ENI("eni-0001")
		if len(e.Blocks) != 3 || len(e.Blocks[2].Addrs) != 16 {
			t.Errorf("after AddBlocks: %+v", e.Blocks)
		}
		return errors.Join(err, tx.Check())
	})
	update(t, s, func(tx *Tx) error {
		return tx.RemoveBlocks("eni-0001", []netip.Prefix{netip.MustParsePrefix("100.64.1.16/28"),
			netip.MustParsePrefix("100.64.1.1/32"), netip.MustParsePrefix("100.64.7.0/28")})
	})
	view(t, s, func(tx *Tx) error {
		e, _, err := tx.ENI("eni-0001")
		if len(e.Blocks) != 1 || e.Blocks[0].CIDR.String() != "100.64.1.2/32" {
			t.Errorf("after RemoveBlocks: %+v", e.Blocks)
		}
		return errors.Join(err, tx.Check())
	})
}

func TestMarkReleasing(t *testing.T) {
	s := newStore(t)
	p0, p1 := netip.MustParsePrefix("100.64.1.0/28"), netip.MustParsePrefix("100.64.1.16/28")
	update(t, s, func(tx *Tx) error {
		if err := tx.PutENI(testENI(1, true, prefixBlock(p0.String()), prefixBlock(p1.String()))); err != nil {
			return err
		}
		mustTake(t, tx, "pod/eth0", t0, 0) // 100.64.1.0, in p0
		return nil
	})
	err := s.Update(func(tx *Tx) error { return tx.MarkReleasing("eni-0001", []netip.Prefix{p1, p0}, true) })
	if !errors.Is(err, ErrAssigned) {
		t.Fatalf("releasing an assigned block: %v", err)
	}
	if err := s.Update(func(tx *Tx) error {
		return tx.MarkReleasing("eni-0001", []netip.Prefix{netip.MustParsePrefix("100.64.9.0/28")}, true)
	}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown block: %v", err)
	}
	view(t, s, func(tx *Tx) error {
		e, _, err := tx.ENI("eni-0001")
		if e.Blocks[1].Releasing {
			t.Error("refused MarkReleasing changed p1")
		}
		return err
	})
	update(t, s, func(tx *Tx) error { return tx.MarkReleasing("eni-0001", []netip.Prefix{p1}, true) })
	view(t, s, func(tx *Tx) error {
		e, _, err := tx.ENI("eni-0001")
		if !e.Blocks[1].Releasing || e.Blocks[1].Addrs[0].State != pool.Releasing {
			t.Errorf("p1 not releasing: %+v", e.Blocks[1])
		}
		return errors.Join(err, tx.Check())
	})
	// p0 has 15 free addresses left; p1 is never handed out.
	update(t, s, func(tx *Tx) error {
		for i := range 15 {
			if a := mustTake(t, tx, "p"+string(rune('a'+i))+"/eth0", t0, 0); !p0.Contains(a.IP) {
				t.Errorf("took %s from a releasing block", a.IP)
			}
		}
		if _, err := tx.Take(Assignment{Key: "more/eth0"}, t0, pool.Config{}); !errors.Is(err, ErrNoFreeAddress) {
			t.Errorf("Take with only releasing left: %v", err)
		}
		return tx.MarkReleasing("eni-0001", []netip.Prefix{p1}, false)
	})
	update(t, s, func(tx *Tx) error {
		if a := mustTake(t, tx, "more/eth0", t0, 0); a.IP != p1.Addr() {
			t.Errorf("after clearing: took %s", a.IP)
		}
		return tx.Check()
	})
}

func TestSetENIReady(t *testing.T) {
	s := newStore(t)
	update(t, s, func(tx *Tx) error {
		if err := tx.PutENI(testENI(1, false, secondaries("100.64.1.1")...)); err != nil {
			return err
		}
		if _, err := tx.Take(Assignment{Key: "a/eth0"}, t0, pool.Config{}); !errors.Is(err, ErrNoFreeAddress) {
			t.Errorf("Take from a not-ready ENI: %v", err)
		}
		if err := tx.SetENIReady("eni-none", true); !errors.Is(err, ErrNotFound) {
			t.Errorf("unknown ENI: %v", err)
		}
		return tx.SetENIReady("eni-0001", true)
	})
	update(t, s, func(tx *Tx) error {
		mustTake(t, tx, "a/eth0", t0, 0)
		e, _, err := tx.ENI("eni-0001")
		if !e.Ready {
			t.Error("not ready")
		}
		return errors.Join(err, tx.SetENIReady("eni-0001", false), tx.Check())
	})
}

func TestPoolMetaKeepsThePrefixFallback(t *testing.T) {
	s := newStore(t)
	until := t0.Add(10 * time.Minute)
	update(t, s, func(tx *Tx) error {
		if err := tx.PutPoolTimers(pool.DefaultPool, pool.Timers{ExcessSince: t0, GrowBlockedUntil: t0.Add(time.Minute), GrowBlockedWhy: "subnet full"}); err != nil {
			return err
		}
		if err := tx.PutNoPrefixesUntil(until); err != nil {
			return err
		}
		return tx.PutPoolTimers(pool.DefaultPool, pool.Timers{ExcessSince: t0.Add(time.Second), GrowBlockedUntil: time.Time{}, GrowBlockedWhy: ""}) // a later pass's timers
	})
	var snap pool.Snapshot
	view(t, s, func(tx *Tx) (err error) { snap, err = tx.Snapshot(); return err })
	if !snap.NoPrefixesUntil.Equal(until) || !snap.ExcessSince.Equal(t0.Add(time.Second)) || !snap.GrowBlockedUntil.IsZero() {
		t.Errorf("snapshot timers: no prefixes until %v, excess since %v, blocked until %v",
			snap.NoPrefixesUntil, snap.ExcessSince, snap.GrowBlockedUntil)
	}
}

// A store written before the prefix fallback existed reads as "never".
func TestPoolMetaWithoutTheFallbackReadsAsZero(t *testing.T) {
	s := newStore(t)
	update(t, s, func(tx *Tx) error {
		return tx.bucket(bState).Put(kPoolMeta, []byte(`{"excessSince":"2026-11-30T10:00:00Z","growBlockedUntil":"0001-01-01T00:00:00Z"}`))
	})
	var m PoolMeta
	view(t, s, func(tx *Tx) (err error) { m, err = tx.PoolMeta(); return err })
	if !m.NoPrefixesUntil.IsZero() || m.ExcessSince.IsZero() {
		t.Errorf("old pool meta decoded as %+v", m)
	}
}
