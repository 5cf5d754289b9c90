package status

import (
	"fmt"

	"vpc-cni/internal/printers"
	"vpc-cni/pool"
)

// NotOursStatus is an attached ENI vpc-cni leaves alone (reconcile's
// classification), why, and what it costs the pool.
type NotOursStatus struct {
	ID          string `json:"id"`
	DeviceIndex int    `json:"deviceIndex"`
	Card        int    `json:"card"`
	Reason      string `json:"reason"`   // no_manage, trunk, efa-only, card N, untagged with MANAGE_UNTAGGED_ENI=false, ...
	ENISlots    int    `json:"eniSlots"` // card 0 ENI slots it takes from vpc-cni (one on card 0; none on another card)
	MaxPods     int    `json:"maxPods"`  // max pods it costs (0 when MAX_PODS is set)
	// PodsHolding: pods that got its addresses before it changed class; they
	// keep them until they are deleted.
	PodsHolding int `json:"podsHolding,omitempty"`
}

func notOursStatus(snap pool.Snapshot, l pool.Limits, c pool.Config) []NotOursStatus {
	out := []NotOursStatus{}
	for _, e := range snap.ENIs {
		if !e.NotOurs() {
			continue
		}
		n := NotOursStatus{ID: e.ID, DeviceIndex: e.DeviceIndex, Card: e.Card, Reason: e.Why}
		if e.Card == 0 {
			n.ENISlots = 1
			if c.MaxPods == 0 {
				n.MaxPods = pool.SlotsPerENI(l)
			}
		}
		for _, b := range e.Blocks {
			for _, a := range b.Addrs {
				if a.State == pool.Assigned {
					n.PodsHolding++
				}
			}
		}
		out = append(out, n)
	}
	return out
}

func notOursRows(t *printers.Table, enis []NotOursStatus) {
	for _, n := range enis {
		cost := fmt.Sprintf("costs %d ENI slot, %d max pods", n.ENISlots, n.MaxPods)
		if n.Card != 0 {
			cost = fmt.Sprintf("on card %d's own limit: costs card 0 nothing", n.Card)
		}
		held := ""
		if n.PodsHolding > 0 {
			held = "; " + printers.Plural(n.PodsHolding, "pod keeps", "pods keep") + " its addresses until deleted"
		}
		t.Row("NOT OURS", fmt.Sprintf("%s (device %d, card %d): %s; left alone, %s%s", n.ID, n.DeviceIndex, n.Card, n.Reason, cost, held))
	}
}
