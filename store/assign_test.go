package store

import (
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"pgregory.net/rapid"

	"vpc-cni/pool"
)

func TestTakeIsIdempotentAndFillsTheAssignment(t *testing.T) {
	s := newStore(t)
	update(t, s, func(tx *Tx) error { return tx.PutENI(testENI(0, true, seqBlocks("100.64.0.5", 3)...)) })
	in := Assignment{ContainerID: "c1", IfName: "eth0", Netns: "/var/run/netns/x", PodNamespace: "default",
		PodName: "web", PodUID: "uid-1", HostVeth: "eni0123456789a", Network: "aws-cni"}
	var first Assignment
	update(t, s, func(tx *Tx) (err error) { first, err = tx.Take(in, t0, pool.Config{}); return err })
	want := in
	want.Key, want.IP, want.ENIID, want.DeviceIndex, want.Time = "c1/eth0", netip.MustParseAddr("100.64.0.5"), "eni-0000", 0, t0
	if !reflect.DeepEqual(first, want) {
		t.Fatalf("Take:\n got %+v\nwant %+v", first, want)
	}
	update(t, s, func(tx *Tx) error {
		again, err := tx.Take(Assignment{Key: "c1/eth0", PodName: "changed"}, t0.Add(time.Hour), pool.Config{})
		if err == nil && (again.IP != first.IP || again.PodName != "web" || !again.Time.Equal(t0)) {
			t.Errorf("second Take changed the assignment: %+v", again)
		}
		return err
	})
	view(t, s, func(tx *Tx) error {
		got, ok, err := tx.Assignment("c1/eth0")
		if !ok || !reflect.DeepEqual(got.IP, first.IP) || got.HostVeth != in.HostVeth {
			t.Errorf("Assignment = %+v %v", got, ok)
		}
		all, err2 := tx.Assignments()
		if len(all) != 1 {
			t.Errorf("Assignments = %+v", all)
		}
		snap, err3 := tx.Snapshot()
		a := snap.ENIs[0].Blocks[0].Addrs[0]
		if a.State != pool.Assigned || a.Owner != "c1/eth0" || !a.Since.Equal(t0) {
			t.Errorf("address after Take: %+v", a)
		}
		return errors.Join(err, err2, err3, tx.Check())
	})
}

func TestTakeWithoutKey(t *testing.T) {
	s := newStore(t)
	err := s.Update(func(tx *Tx) error { _, err := tx.Take(Assignment{ContainerID: "c"}, t0, pool.Config{}); return err })
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("Take without key: %v", err)
	}
}

func TestGive(t *testing.T) {
	s := newStore(t)
	update(t, s, func(tx *Tx) error {
		if err := tx.PutENI(testENI(0, true, seqBlocks("100.64.0.5", 2)...)); err != nil {
			return err
		}
		a, ok, err := tx.Give("nobody/eth0", t0)
		if ok || err != nil || a != (Assignment{}) {
			t.Errorf("Give(unknown) = %+v %v %v", a, ok, err)
		}
		taken := mustTake(t, tx, "c/eth0", t0, 0)
		given, ok, err := tx.Give("c/eth0", t0.Add(time.Minute))
		if !ok || err != nil || given.IP != taken.IP {
			t.Errorf("Give = %+v %v %v", given, ok, err)
		}
		_, ok, err = tx.Give("c/eth0", t0.Add(time.Minute))
		if ok || err != nil {
			t.Errorf("second Give = %v %v", ok, err)
		}
		return nil
	})
	view(t, s, func(tx *Tx) error {
		snap, err := tx.Snapshot()
		a := snap.ENIs[0].Blocks[0].Addrs[0]
		if a.State != pool.Cooling || !a.Since.Equal(t0.Add(time.Minute)) || a.Owner != "" {
			t.Errorf("address after Give: %+v", a)
		}
		if _, ok, _ := tx.Assignment("c/eth0"); ok {
			t.Error("assignment kept after Give")
		}
		return errors.Join(err, tx.Check())
	})
}

func TestTakeNeverReturnsACoolingAddressEarly(t *testing.T) {
	s := newStore(t)
	const cooldown = 30 * time.Second
	update(t, s, func(tx *Tx) error {
		if err := tx.PutENI(testENI(0, true, seqBlocks("100.64.0.1", 2)...)); err != nil {
			return err
		}
		for _, k := range []string{"a/eth0", "b/eth0"} {
			mustTake(t, tx, k, t0, cooldown)
		}
		if _, _, err := tx.Give("a/eth0", t0.Add(time.Second)); err != nil {
			return err
		}
		_, _, err := tx.Give("b/eth0", t0.Add(2*time.Second))
		return err
	})
	update(t, s, func(tx *Tx) error {
		_, err := tx.Take(Assignment{Key: "x/eth0"}, t0.Add(cooldown), pool.Config{Cooldown: cooldown})
		if !errors.Is(err, ErrNoFreeAddress) {
			t.Errorf("Take before cooldown: %v", err)
		}
		// .1 cooled at t0+1s+cooldown; .2 is still cooling at that instant.
		a := mustTake(t, tx, "x/eth0", t0.Add(time.Second+cooldown), cooldown)
		if a.IP.String() != "100.64.0.1" {
			t.Errorf("took %s", a.IP)
		}
		_, err = tx.Take(Assignment{Key: "y/eth0"}, t0.Add(time.Second+cooldown), pool.Config{Cooldown: cooldown})
		if !errors.Is(err, ErrNoFreeAddress) {
			t.Errorf("Take of the still-cooling address: %v", err)
		}
		return tx.Check()
	})
}

func TestTakeOrder(t *testing.T) {
	s := newStore(t)
	update(t, s, func(tx *Tx) error {
		for _, e := range []pool.ENI{
			testENI(3, true, seqBlocks("100.64.3.1", 1)...),
			testENI(0, true, append(seqBlocks("100.64.0.9", 1), seqBlocks("100.64.0.3", 1)...)...),
			testENI(2, false, seqBlocks("100.64.2.1", 1)...),
			testENI(1, true, prefixBlock("100.64.1.16/28"), prefixBlock("100.64.1.0/28")),
		} {
			if err := tx.PutENI(e); err != nil {
				return err
			}
		}
		var got []string
		for i := range 2 + 32 + 1 {
			got = append(got, mustTake(t, tx, fmt.Sprintf("c%d/eth0", i), t0, 0).IP.String())
		}
		want := []string{"100.64.0.3", "100.64.0.9", "100.64.1.0", "100.64.1.1"}
		if !reflect.DeepEqual(got[:4], want) || got[18] != "100.64.1.16" || got[34] != "100.64.3.1" {
			t.Errorf("order %v", got)
		}
		_, err := tx.Take(Assignment{Key: "last/eth0"}, t0, pool.Config{})
		if !errors.Is(err, ErrNoFreeAddress) {
			t.Errorf("Take with the not-ready ENI left: %v", err)
		}
		return tx.Check()
	})
}

// TestTakeMatchesTheRule drives random pools and operations and checks that
// every Take picks what the plain rule over the snapshot picks, and that the
// store stays consistent.
func TestTakeMatchesTheRule(t *testing.T) {
	base := t.TempDir()
	n := 0
	rapid.Check(t, func(rt *rapid.T) {
		n++
		s, err := OpenNew(filepath.Join(base, fmt.Sprint(n)), Options{})
		if err != nil {
			rt.Fatal(err)
		}
		cooldown := time.Duration(rapid.IntRange(0, 3).Draw(rt, "cooldown")) * time.Second
		err = s.Update(func(tx *Tx) error { return randomOps(rt, tx, cooldown) })
		if err != nil {
			rt.Fatal(err)
		}
		if err := s.View(func(tx *Tx) error { return tx.Check() }); err != nil {
			rt.Fatal(err)
		}
	})
}

func randomOps(rt *rapid.T, tx *Tx, cooldown time.Duration) error {
	nENI := rapid.IntRange(1, 4).Draw(rt, "enis")
	devs := rapid.Permutation([]int{0, 1, 2, 3, 4, 5}).Draw(rt, "devs")
	for i := range nENI {
		e := testENI(devs[i], rapid.Bool().Draw(rt, "ready"))
		for j := range rapid.IntRange(0, 3).Draw(rt, "blocks") {
			if rapid.Bool().Draw(rt, "prefix") {
				e.Blocks = append(e.Blocks, prefixBlock(fmt.Sprintf("100.64.%d.%d/28", devs[i], 16*(j+1))))
			} else {
				e.Blocks = append(e.Blocks, seqBlocks(fmt.Sprintf("100.64.%d.%d", devs[i], 200+j), 1)...)
			}
		}
		if err := tx.PutENI(e); err != nil {
			return err
		}
	}
	now := t0
	var held []string
	for step := range rapid.IntRange(1, 60).Draw(rt, "steps") {
		now = now.Add(time.Duration(rapid.IntRange(0, 1500).Draw(rt, "ms")) * time.Millisecond)
		switch op := rapid.IntRange(0, 9).Draw(rt, "op"); {
		case op < 5:
			if err := takeAndCompare(rt, tx, fmt.Sprintf("s%d/eth0", step), now, cooldown); err != nil {
				return err
			}
			if a, ok, _ := tx.Assignment(fmt.Sprintf("s%d/eth0", step)); ok {
				held = append(held, a.Key)
			}
		case op < 8 && len(held) > 0:
			i := rapid.IntRange(0, len(held)-1).Draw(rt, "give")
			if _, ok, err := tx.Give(held[i], now); err != nil || !ok {
				return fmt.Errorf("Give(%s) = %v, %v", held[i], ok, err)
			}
			held = append(held[:i], held[i+1:]...)
		case op == 8:
			if err := randomRelease(rt, tx); err != nil {
				return err
			}
		default:
			snap, _ := tx.Snapshot()
			e := snap.ENIs[rapid.IntRange(0, len(snap.ENIs)-1).Draw(rt, "eni")]
			if err := tx.SetENIReady(e.ID, !e.Ready); err != nil {
				return err
			}
		}
		if err := tx.Check(); err != nil {
			return err
		}
	}
	return nil
}

func takeAndCompare(rt *rapid.T, tx *Tx, key string, now time.Time, cooldown time.Duration) error {
	snap, err := tx.Snapshot()
	if err != nil {
		return err
	}
	c := pool.Config{Cooldown: cooldown, CustomNetworking: rapid.Bool().Draw(rt, "custom")}
	wantENI, wantIP, ok := refPick(snap, now, c)
	got, err := tx.Take(Assignment{Key: key}, now, c)
	switch {
	case !ok && !errors.Is(err, ErrNoFreeAddress):
		rt.Fatalf("Take = %+v, %v; the rule finds nothing", got, err)
	case ok && (err != nil || got.IP != wantIP || got.ENIID != wantENI):
		rt.Fatalf("Take = %s on %s (%v), the rule picks %s on %s", got.IP, got.ENIID, err, wantIP, wantENI)
	}
	return nil
}

// randomRelease marks or clears a random block, expecting a refusal exactly
// when a pod holds one of its addresses.
func randomRelease(rt *rapid.T, tx *Tx) error {
	snap, _ := tx.Snapshot()
	e := snap.ENIs[rapid.IntRange(0, len(snap.ENIs)-1).Draw(rt, "eni")]
	if len(e.Blocks) == 0 {
		return nil
	}
	b := e.Blocks[rapid.IntRange(0, len(e.Blocks)-1).Draw(rt, "block")]
	on := !b.Releasing
	err := tx.MarkReleasing(e.ID, []netip.Prefix{b.CIDR}, on)
	assigned := false
	for _, a := range b.Addrs {
		assigned = assigned || a.State == pool.Assigned
	}
	if on && assigned != errors.Is(err, ErrAssigned) {
		rt.Fatalf("MarkReleasing(%s) with assigned=%v: %v", b.CIDR, assigned, err)
	}
	if !errors.Is(err, ErrAssigned) {
		return err
	}
	return nil
}

func TestAvailableAtLeastFollowsTheIndex(t *testing.T) {
	s := newStore(t)
	const cooldown = 30 * time.Second
	update(t, s, func(tx *Tx) error {
		if err := tx.PutENI(testENI(0, true, seqBlocks("100.64.0.1", 3)...)); err != nil {
			return err
		}
		if err := tx.PutENI(testENI(1, false, seqBlocks("100.64.1.1", 5)...)); err != nil {
			return err
		}
		mustTake(t, tx, "a/eth0", t0, cooldown)
		mustTake(t, tx, "b/eth0", t0, cooldown)
		_, _, err := tx.Give("b/eth0", t0)
		return err
	})
	view(t, s, func(tx *Tx) error {
		for _, c := range []struct {
			n    int
			now  time.Time
			want bool
		}{{0, t0, true}, {1, t0, true}, {2, t0, false}, {2, t0.Add(cooldown), true}, {3, t0.Add(cooldown), false}} {
			got, err := tx.AvailableAtLeast(c.n, c.now, pool.Config{Cooldown: cooldown})
			if err != nil || got != c.want {
				t.Errorf("AvailableAtLeast(%d, +%v) = %v, %v; want %v", c.n, c.now.Sub(t0), got, err, c.want)
			}
		}
		// From device 1 (custom networking) the primary's two usable
		// addresses do not count, and device 1 is not ready.
		if got, err := tx.AvailableAtLeast(1, t0.Add(cooldown), pool.Config{Cooldown: cooldown, CustomNetworking: true}); err != nil || got {
			t.Errorf("AvailableAtLeast(1, from device 1) = %v, %v; want false", got, err)
		}
		return nil
	})
}
