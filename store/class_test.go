package store

import (
	"errors"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"vpc-cni/pool"
)

func TestNotOursENIKeepsItsClassAndHandsNothingOut(t *testing.T) {
	s := newStore(t)
	facts := pool.ENIFacts{Known: true, InterfaceType: "trunk"}
	update(t, s, func(tx *Tx) error {
		err := tx.PutENI(pool.ENI{ID: "eni-trunk", DeviceIndex: 1, Ready: true, Class: pool.NotOurs, Why: "trunk",
			Facts: facts, Blocks: secondaries("100.64.0.20")})
		if err != nil {
			return err
		}
		// Card 1, device 0: beside the primary's device index, on its own card.
		return tx.PutENI(pool.ENI{ID: "eni-card1", DeviceIndex: 0, Card: 1, Ready: true, Class: pool.Adopted,
			Blocks: secondaries("100.64.0.21")})
	})
	update(t, s, func(tx *Tx) error {
		if err := tx.SetENIReady("eni-trunk", false); err != nil {
			return err
		}
		if err := tx.SetENIReady("eni-trunk", true); err != nil {
			return err
		}
		_, err := tx.Take(Assignment{Key: "c/eth0"}, t0, pool.Config{})
		if !errors.Is(err, ErrNoFreeAddress) {
			t.Errorf("Take on a node with only not-ours addresses: %v, want ErrNoFreeAddress", err)
		}
		return nil
	})
	view(t, s, func(tx *Tx) error {
		snap, err := tx.Snapshot()
		if err != nil {
			return err
		}
		if len(snap.ENIs) != 2 || snap.ENIs[0].ID != "eni-trunk" || snap.ENIs[1].ID != "eni-card1" {
			t.Fatalf("snapshot order (card 0 first): %+v", snap.ENIs)
		}
		e := snap.ENIs[0]
		if e.Class != pool.NotOurs || e.Why != "trunk" || e.Facts != facts || snap.ENIs[1].Card != 1 {
			t.Errorf("class lost in the round trip: %+v", snap.ENIs)
		}
		return nil
	})
}

func TestVersion1ENIRecordReadsAsUnclassified(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenNew(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	update(t, s, func(tx *Tx) error { return tx.PutENI(pool.ENI{ID: "eni-old", DeviceIndex: 1}) })
	// Make it a version 1 file with a version 1 record, as an older binary left it.
	writeBolt(t, filepath.Join(dir, DBFile), func(tx *bolt.Tx) error {
		if err := tx.Bucket(bMeta).Put(kSchema, []byte("1")); err != nil {
			return err
		}
		return tx.Bucket(bENIs).Put([]byte("eni-old"),
			[]byte(`{"id":"eni-old","deviceIndex":1,"mac":"","primaryIp":"","subnetId":"","subnetCidr":"","ready":true,"createdAt":"0001-01-01T00:00:00Z"}`))
	})
	if _, err := Open(dir, Options{ReadOnly: true}); !errors.Is(err, ErrOlderSchema) {
		t.Fatalf("read-only open of a version 1 file: %v, want ErrOlderSchema", err)
	}
	s, err = OpenNew(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	assertCurrentSchema(t, s)
	view(t, s, func(tx *Tx) error {
		snap, err := tx.Snapshot()
		if err != nil {
			return err
		}
		e := snap.ENIs[0]
		if e.Class != "" || e.Facts.Known || e.Card != 0 || !e.Ready || !e.Deletable() {
			t.Errorf("version 1 record: %+v, want class unknown, facts unknown, card 0 (as version 1 used it)", e)
		}
		return nil
	})
}
