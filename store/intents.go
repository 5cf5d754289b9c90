package store

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"vpc-cni/pool"
)

// Intent is an EC2 mutation in flight, recorded before the call so a process
// killed mid-call is repaired by the next reconcile.
type Intent struct {
	ID          string          `json:"id"` // the call's ClientToken
	Kind        pool.ActionKind `json:"kind"`
	ENIID       string          `json:"eniId,omitempty"`
	DeviceIndex int             `json:"deviceIndex"`
	Count       int             `json:"count,omitempty"`
	Prefixes    bool            `json:"prefixes,omitempty"`
	Blocks      []netip.Prefix  `json:"blocks,omitempty"`
	// SubnetID, SubnetCIDR and Groups place a new ENI: chosen before the
	// create call, so a replay after a crash asks for the very same ENI.
	// Absent in older intents: the node's own subnet and groups.
	SubnetID   string       `json:"subnetId,omitempty"`
	SubnetCIDR netip.Prefix `json:"subnetCidr,omitzero"`
	Groups     []string     `json:"groups,omitempty"`
	Started    time.Time    `json:"started"`
	Step       string       `json:"step,omitempty"` // how far it got, e.g. "created", "attached"
	// Repairs that failed so far, and the time before which no pass tries
	// again: an intent that cannot be settled (a call denied, EC2 down) is
	// backed off instead of costing calls on every pass.
	Tries   int       `json:"tries,omitempty"`
	NextTry time.Time `json:"nextTry,omitzero"`
}

// PutIntent inserts or replaces the intent with i.ID.
func (t *Tx) PutIntent(i Intent) error {
	if i.ID == "" {
		return fmt.Errorf("intent without ID: %w", ErrInvalid)
	}
	return t.putJSON(bIntents, []byte(i.ID), i)
}

// Intents lists the intents, oldest first.
func (t *Tx) Intents() ([]Intent, error) {
	var out []Intent
	err := t.bucket(bIntents).ForEach(func(k, _ []byte) error {
		var i Intent
		_, err := t.getJSON(bIntents, k, &i)
		out = append(out, i)
		return err
	})
	slices.SortFunc(out, func(a, b Intent) int { return cmp.Or(a.Started.Compare(b.Started), cmp.Compare(a.ID, b.ID)) })
	return out, err
}

// DeleteIntent forgets an intent; an unknown ID is not an error.
func (t *Tx) DeleteIntent(id string) error { return t.bucket(bIntents).Delete([]byte(id)) }
