package store

import (
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"vpc-cni/pool"
	"vpc-cni/settings"
)

func TestNodeAndSettingsRoundTrip(t *testing.T) {
	s := newStore(t)
	node := Node{InstanceID: "i-0abc", InstanceType: "m5.large", Region: "us-west-2", AZ: "us-west-2a",
		VPCID: "vpc-1", VPCCIDRs: []netip.Prefix{netip.MustParsePrefix("100.64.0.0/16")}, SubnetID: "subnet-1",
		SubnetCIDR: netip.MustParsePrefix("100.64.0.0/20"), PrimaryENI: "eni-0", PrimaryMAC: "0a:00:00:00:00:00",
		PrimaryIP: netip.MustParseAddr("100.64.0.10"), SecurityGroups: []string{"sg-1", "sg-2"},
		Limits: pool.Limits{MaxENIs: 3, IPv4PerENI: 10}, Hypervisor: "nitro", LearnedAt: t0}
	five := 5
	want := Settings{Overrides: settings.Overrides{WarmIP: &five},
		Effective: pool.Config{WarmENITarget: 1, WarmIPTarget: 5, Cooldown: 30 * time.Second, PrefixDelegation: true},
		LastPass:  []settings.Value{{Name: "WARM_IP_TARGET", Value: "5", Source: settings.FromStore}}, UpdatedAt: t0}
	view(t, s, func(tx *Tx) error {
		_, ok, err := tx.Node()
		if ok {
			t.Error("node before PutNode")
		}
		got, err2 := tx.Settings()
		if !reflect.DeepEqual(got, Settings{}) {
			t.Errorf("settings before PutSettings: %+v", got)
		}
		return errors.Join(err, err2)
	})
	update(t, s, func(tx *Tx) error { return errors.Join(tx.PutNode(node), tx.PutSettings(want)) })
	view(t, s, func(tx *Tx) error {
		gotNode, ok, err := tx.Node()
		if !ok || !reflect.DeepEqual(gotNode, node) {
			t.Errorf("Node:\n got %+v\nwant %+v", gotNode, node)
		}
		gotSettings, err2 := tx.Settings()
		if !reflect.DeepEqual(gotSettings, want) || gotSettings.Overrides.MinIP != nil {
			t.Errorf("Settings:\n got %+v\nwant %+v", gotSettings, want)
		}
		gotOverrides, err3 := tx.Overrides() // what ADD reads of them
		if !reflect.DeepEqual(gotOverrides, want.Overrides) {
			t.Errorf("Overrides: got %+v, want %+v", gotOverrides, want.Overrides)
		}
		return errors.Join(err, err2, err3)
	})
}

func TestIntents(t *testing.T) {
	s := newStore(t)
	a := Intent{ID: "tok-b", Kind: pool.CreateENI, DeviceIndex: 2, Count: 3, Prefixes: true, Started: t0, Step: "created"}
	b := Intent{ID: "tok-a", Kind: pool.Unassign, ENIID: "eni-1", DeviceIndex: 1,
		Blocks: []netip.Prefix{netip.MustParsePrefix("100.64.1.0/28")}, Started: t0.Add(time.Second)}
	update(t, s, func(tx *Tx) error {
		if err := tx.PutIntent(Intent{}); !errors.Is(err, ErrInvalid) {
			t.Errorf("intent without ID: %v", err)
		}
		return errors.Join(tx.PutIntent(b), tx.PutIntent(a))
	})
	view(t, s, func(tx *Tx) error {
		got, err := tx.Intents()
		if !reflect.DeepEqual(got, []Intent{a, b}) {
			t.Errorf("Intents (oldest first):\n got %+v\nwant %+v", got, []Intent{a, b})
		}
		return err
	})
	a.Step = "attached"
	update(t, s, func(tx *Tx) error {
		return errors.Join(tx.PutIntent(a), tx.DeleteIntent("tok-a"), tx.DeleteIntent("unknown"))
	})
	view(t, s, func(tx *Tx) error {
		got, err := tx.Intents()
		if !reflect.DeepEqual(got, []Intent{a}) {
			t.Errorf("Intents after update/delete: %+v", got)
		}
		return err
	})
}

func TestCountersEventsReport(t *testing.T) {
	s := newStore(t)
	update(t, s, func(tx *Tx) error {
		return errors.Join(tx.AddCounter("adds", 2), tx.AddCounter("adds", 3), tx.AddCounter("dels", -1))
	})
	// In a few transactions, so the bound is enforced across them.
	for from := 0; from < MaxEvents+20; from += 130 {
		update(t, s, func(tx *Tx) error {
			for i := from; i < min(from+130, MaxEvents+20); i++ {
				e := Event{Time: t0.Add(time.Duration(i) * time.Second), Kind: "grow", Message: fmt.Sprint(i)}
				if err := tx.AddEvent(e); err != nil {
					return err
				}
			}
			return nil
		})
	}
	report := ReconcileReport{Time: t0, Duration: 120 * time.Millisecond, Actions: 2,
		Calls: map[string]int{"AssignPrivateIpAddresses": 1}, Error: "throttled"}
	view(t, s, func(tx *Tx) error {
		_, ok, err := tx.ReconcileReport()
		if ok {
			t.Error("report before PutReconcileReport")
		}
		return err
	})
	update(t, s, func(tx *Tx) error { return tx.PutReconcileReport(report) })
	view(t, s, func(tx *Tx) error {
		c, err := tx.Counters()
		if !reflect.DeepEqual(c, map[string]int64{"adds": 5, "dels": -1}) {
			t.Errorf("Counters = %v", c)
		}
		all, err2 := tx.Events(0)
		if len(all) != MaxEvents || all[0].Message != "20" || all[MaxEvents-1].Message != fmt.Sprint(MaxEvents+19) {
			t.Errorf("Events(0): %d, first %+v", len(all), all[0])
		}
		last, err3 := tx.Events(2)
		if len(last) != 2 || last[0].Message != fmt.Sprint(MaxEvents+18) || !last[1].Time.Equal(t0.Add((MaxEvents+19)*time.Second)) {
			t.Errorf("Events(2) = %+v", last)
		}
		got, ok, err4 := tx.ReconcileReport()
		if !ok || !reflect.DeepEqual(got, report) {
			t.Errorf("ReconcileReport = %+v %v", got, ok)
		}
		return errors.Join(err, err2, err3, err4)
	})
}

func TestTakeToken(t *testing.T) {
	s := newStore(t)
	update(t, s, func(tx *Tx) error {
		if _, err := tx.TakeToken("ec2", t0, 0, 1); !errors.Is(err, ErrInvalid) {
			t.Errorf("rate 0: %v", err)
		}
		return nil
	})
	take := func(now time.Time) time.Duration {
		var wait time.Duration
		update(t, s, func(tx *Tx) (err error) { wait, err = tx.TakeToken("ec2", now, 2, 3); return err })
		return wait
	}
	for i := range 3 {
		if w := take(t0); w != 0 {
			t.Fatalf("token %d of the burst: wait %v", i, w)
		}
	}
	if w := take(t0); w != 500*time.Millisecond {
		t.Fatalf("empty bucket: wait %v, want 500ms", w)
	}
	if w := take(t0.Add(250 * time.Millisecond)); w != 250*time.Millisecond {
		t.Fatalf("half refilled: wait %v, want 250ms", w)
	}
	if w := take(t0.Add(500 * time.Millisecond)); w != 0 {
		t.Fatalf("refilled: wait %v", w)
	}
	// A clock going backwards refills nothing.
	if w := take(t0); w != 500*time.Millisecond {
		t.Fatalf("clock went back: wait %v", w)
	}
	// Long idle: at most burst tokens.
	for i := range 3 {
		if w := take(t0.Add(time.Hour)); w != 0 {
			t.Fatalf("after idle, token %d: wait %v", i, w)
		}
	}
	if w := take(t0.Add(time.Hour)); w == 0 {
		t.Fatal("burst exceeded after idle")
	}
	// Buckets are independent.
	update(t, s, func(tx *Tx) error {
		w, err := tx.TakeToken("other", t0, 1, 1)
		if w != 0 {
			t.Errorf("other bucket: wait %v", w)
		}
		return err
	})
}

func TestRefillClaimCoalescesUntilAPassPlans(t *testing.T) {
	s := newStore(t)
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	claim := func(at time.Time) bool {
		t.Helper()
		var ok bool
		update(t, s, func(tx *Tx) (err error) { ok, err = tx.claimRefill(at); return err })
		return ok
	}
	if !claim(now) {
		t.Fatal("the first low ADD did not get the claim")
	}
	if claim(now.Add(time.Second)) {
		t.Fatal("a second low ADD got the claim while the first one's pass has not planned")
	}
	update(t, s, func(tx *Tx) error { return tx.ClearRefillClaim() })
	if !claim(now.Add(2 * time.Second)) {
		t.Fatal("after a pass planned, the next low ADD did not get the claim")
	}
	if !claim(now.Add(2*time.Second + RefillClaimTTL)) {
		t.Fatal("a claim whose pass never planned did not lapse after RefillClaimTTL")
	}
}

func TestRefillPlansAtOnceAfterQuietAndGathersABurst(t *testing.T) {
	s := newStore(t)
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	lowAdd := func(at time.Time) (claimed bool) {
		t.Helper()
		update(t, s, func(tx *Tx) (err error) { claimed, err = tx.claimRefill(at); return err })
		return claimed
	}
	wait := func(at time.Time) (w time.Duration) {
		t.Helper()
		update(t, s, func(tx *Tx) error { w = tx.RefillWait(at); return nil })
		return w
	}
	planned := func() { update(t, s, func(tx *Tx) error { return tx.ClearRefillClaim() }) }
	if w := wait(t0); w != 0 {
		t.Fatalf("no claim stands, yet the refill would wait %v", w)
	}
	if !lowAdd(t0) {
		t.Fatal("the first low ADD did not claim the refill")
	}
	if w := wait(t0); w != 0 {
		t.Fatalf("a refill claimed after a quiet spell would wait %v, want 0 (plan at once)", w)
	}
	planned()
	// The burst goes on: the next low ADD's claim gathers it.
	at := t0.Add(50 * time.Millisecond)
	if !lowAdd(at) {
		t.Fatal("a low ADD after the pass planned did not claim the next refill")
	}
	if w := wait(at); w != RefillQuiet {
		t.Fatalf("a refill claimed within a burst: wait %v, want the quiet time %v", w, RefillQuiet)
	}
	lowAdd(at.Add(50 * time.Millisecond))
	if w := wait(at.Add(60 * time.Millisecond)); w != RefillQuiet-10*time.Millisecond {
		t.Fatalf("10ms after the burst's last low ADD: wait %v, want %v", w, RefillQuiet-10*time.Millisecond)
	}
	if w := wait(at.Add(50*time.Millisecond + RefillQuiet)); w != 0 {
		t.Fatalf("after %v of quiet: wait %v, want 0", RefillQuiet, w)
	}
	for a := at; a.Before(at.Add(2 * RefillGather)); a = a.Add(RefillQuiet / 2) {
		lowAdd(a) // a burst that never goes quiet
	}
	if w := wait(at.Add(RefillGather)); w != 0 {
		t.Fatalf("a burst that never goes quiet held the refill past RefillGather: wait %v", w)
	}
	planned()
	if w := wait(at.Add(RefillGather)); w != 0 {
		t.Fatalf("a pass planned (claim cleared), yet the refill would wait %v", w)
	}
	quiet := at.Add(2*RefillGather + RefillGather)
	lowAdd(quiet)
	if w := wait(quiet); w != 0 {
		t.Fatalf("a refill claimed %v after the last low ADD would wait %v, want 0", RefillGather, w)
	}
}
