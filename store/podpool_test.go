package store

import (
	"testing"

	"vpc-cni/pool"
	"vpc-cni/settings"
)

// The targets `vpcctl pool warm` stores apply to the pool of the ADD's take
// (the default pool's, and a profile's that sets none of its own), and a
// node that is not vouched for rolls the take back.
func TestThePodTakeAppliesTheStoredOverridesToItsPool(t *testing.T) {
	five := 5
	for _, c := range []struct {
		name        string
		overridable bool
		wantLow     bool
	}{{"the default pool", true, true}, {"a profile with targets of its own", false, false}} {
		s := newStore(t)
		update(t, s, func(tx *Tx) error {
			if err := tx.PutENI(pool.ENI{ID: "eni-0", Ready: true, Blocks: secondaries("100.64.0.10", "100.64.0.11", "100.64.0.12", "100.64.0.13")}); err != nil {
				return err
			}
			return tx.PutSettings(Settings{Overrides: settings.Overrides{WarmIP: &five}})
		})
		in := PodPool{Config: pool.Config{WarmIPTarget: 1}, Overridable: c.overridable}
		res, err := s.TakeForPod(Assignment{Key: "a/eth0"}, t0, in, false)
		if err != nil {
			t.Fatal(err)
		}
		if res.Low != c.wantLow {
			t.Errorf("%s: 3 free left under WARM_IP_TARGET=1 and a stored 5: low %v, want %v", c.name, res.Low, c.wantLow)
		}
	}
	s := newStore(t)
	update(t, s, func(tx *Tx) error {
		return tx.PutNode(Node{InstanceID: "i-1", ConfirmedBoot: "boot-a"})
	})
	if _, err := s.TakeForPod(Assignment{Key: "a/eth0"}, t0, PodPool{Boot: "boot-b"}, false); err != ErrUnconfirmed {
		t.Fatalf("a node confirmed in another boot: %v, want ErrUnconfirmed", err)
	}
	if _, err := s.TakeForPod(Assignment{Key: "a/eth0"}, t0, PodPool{Boot: "boot-b", ConfirmedID: "i-1"}, false); err == ErrUnconfirmed {
		t.Fatal("a node this process confirmed was refused")
	}
}
