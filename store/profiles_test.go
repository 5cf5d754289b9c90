package store

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	"vpc-cni/pool"
)

// A node with the primary (default pool), gold's ENI at device 1 and
// blue's at device 2, each with two free addresses.
func profileStore(t *testing.T) *Store {
	s := newStore(t)
	gold := testENI(1, true, secondaries("100.64.1.1", "100.64.1.2")...)
	gold.Profile = "gold"
	blue := testENI(2, true, secondaries("100.64.2.1", "100.64.2.2")...)
	blue.Profile = "blue"
	update(t, s, func(tx *Tx) error {
		for _, e := range []pool.ENI{testENI(0, true, secondaries("100.64.0.1", "100.64.0.2")...), gold, blue} {
			if err := tx.PutENI(e); err != nil {
				return err
			}
		}
		return nil
	})
	return s
}

func TestEachPoolsPodsTakeOnlyItsOwnENIs(t *testing.T) {
	s := profileStore(t)
	cfg := pool.Config{Cooldown: 30 * time.Second}
	gold, blue := cfg, cfg
	gold.Profile, blue.Profile = "gold", "blue"
	update(t, s, func(tx *Tx) error {
		for i, c := range []struct {
			cfg  pool.Config
			want string
		}{{cfg, "eni-0000"}, {gold, "eni-0001"}, {blue, "eni-0002"}, {cfg, "eni-0000"}, {gold, "eni-0001"}, {blue, "eni-0002"}} {
			a, err := tx.takeFamilies(Assignment{ContainerID: "c" + string(rune('a'+i)), IfName: "eth0"}, t0, c.cfg)
			if err != nil {
				t.Fatalf("take %d for %q: %v", i, c.cfg.Profile, err)
			}
			if a.ENIID != c.want || a.Profile != c.cfg.Profile {
				t.Fatalf("take %d for %q: %s on %s, profile %q", i, c.cfg.Profile, a.IP, a.ENIID, a.Profile)
			}
		}
		// Every pool is empty now: none borrows from another.
		for _, c := range []pool.Config{cfg, gold, blue} {
			if _, err := tx.takeFamilies(Assignment{ContainerID: "more-" + string(c.Profile), IfName: "eth0"}, t0, c); !errors.Is(err, ErrNoFreeAddress) {
				t.Fatalf("a full %q pool: %v, want ErrNoFreeAddress", c.Profile, err)
			}
		}
		return tx.Check()
	})
}

func TestAProfileAddressComesBackToItsPool(t *testing.T) {
	s := profileStore(t)
	update(t, s, func(tx *Tx) error {
		a, err := tx.Take(Assignment{Key: "c1/eth0"}, t0, pool.Config{Profile: "gold"})
		if err != nil || a.Profile != "gold" {
			t.Fatalf("%+v %v", a, err)
		}
		if _, _, err := tx.Give(a.Key, t0); err != nil {
			return err
		}
		if err := tx.Check(); err != nil {
			t.Fatalf("after give: %v", err)
		}
		// Cooling: not for gold yet, and never for a default pod.
		b, err := tx.Take(Assignment{Key: "c2/eth0"}, t0, pool.Config{Cooldown: time.Minute, Profile: "gold"})
		if err != nil || b.IP == a.IP {
			t.Fatalf("gold's second pod: %+v %v, want the other address", b, err)
		}
		if _, err := tx.Take(Assignment{Key: "c3/eth0"}, t0.Add(time.Hour), pool.Config{Cooldown: time.Minute}); err != nil {
			return err
		}
		c, err := tx.Take(Assignment{Key: "c4/eth0"}, t0.Add(time.Hour), pool.Config{Cooldown: time.Minute})
		if err != nil || c.ENIID != "eni-0000" {
			t.Fatalf("default pod: %+v %v", c, err)
		}
		d, err := tx.Take(Assignment{Key: "c5/eth0"}, t0.Add(time.Hour), pool.Config{Cooldown: time.Minute, Profile: "gold"})
		if err != nil || d.IP != a.IP {
			t.Fatalf("gold, cooled: %+v %v, want %s again", d, err, a.IP)
		}
		return tx.Check()
	})
}

func TestADriftedProfileENIGivesNoAddress(t *testing.T) {
	s := profileStore(t)
	update(t, s, func(tx *Tx) error {
		e, _, err := tx.ENI("eni-0001")
		if err != nil {
			return err
		}
		e.GroupsDrift = "groups [sg-x], the profile's are [sg-gold]"
		if err := tx.PutENI(e); err != nil {
			return err
		}
		if _, err := tx.Take(Assignment{Key: "c1/eth0"}, t0, pool.Config{Profile: "gold"}); !errors.Is(err, ErrNoFreeAddress) {
			t.Fatalf("take from a drifted ENI: %v", err)
		}
		enough, err := tx.AvailableAtLeast(1, t0, pool.Config{Profile: "blue"})
		if err != nil || !enough {
			t.Fatalf("blue: %v %v", enough, err)
		}
		return nil
	})
}

func TestWaitersAndTimersArePerPool(t *testing.T) {
	s := newStore(t)
	until := t0.Add(time.Minute)
	update(t, s, func(tx *Tx) error {
		for _, w := range []struct{ key, profile string }{{"a", ""}, {"b", "gold"}, {"c", "gold"}} {
			if err := tx.PutWaiter(w.key, pool.Pool(w.profile), until, t0); err != nil {
				return err
			}
		}
		by, err := tx.Waiting(t0)
		if err != nil || by[""] != 1 || by["gold"] != 2 {
			t.Fatalf("waiting %v %v", by, err)
		}
		return tx.PutPoolTimers("gold", pool.Timers{ExcessSince: t0})
	})
	view(t, s, func(tx *Tx) error {
		snap, err := tx.Snapshot()
		if err != nil {
			return err
		}
		if !snap.Profiles["gold"].ExcessSince.Equal(t0) || !snap.ExcessSince.IsZero() {
			t.Fatalf("timers: default %v, gold %+v", snap.ExcessSince, snap.Profiles["gold"])
		}
		return nil
	})
}

// A restored assignment (a lost state rebuilt) names the profile of the ENI
// its address is on.
func TestARestoredAssignmentNamesItsENIsProfile(t *testing.T) {
	s := profileStore(t)
	update(t, s, func(tx *Tx) error {
		a, err := tx.Restore(Assignment{Key: "c1/eth0", IP: netip.MustParseAddr("100.64.2.2")}, t0)
		if err != nil || a.Profile != "blue" {
			t.Fatalf("restored %+v %v, want profile blue", a, err)
		}
		return tx.Check()
	})
}
