package pool

import "fmt"

// Class says whose an attached ENI is, and so what vpc-cni may do with it.
type Class string

const (
	// Ours: created by vpc-cni (or the reference): its description prefix
	// and this node's instance tag. Addresses go to pods; it may be deleted.
	Ours Class = "ours"
	// Adopted: attached, neither ours nor excluded (the primary ENI, a
	// user's untagged ENI under MANAGE_UNTAGGED_ENI=true, an explicit
	// no_manage=false). Addresses go to pods and excess goes back as
	// addresses, but vpc-cni never detaches or deletes it.
	Adopted Class = "adopted"
	// NotOurs: someone else's (no_manage=true, a trunk or EFA interface, a
	// network card above 0, an untagged ENI under MANAGE_UNTAGGED_ENI=false).
	// Nothing is handed out, assigned, released, routed, tagged, detached or
	// deleted; it still takes one of the instance's ENI slots on its card.
	NotOurs Class = "not-ours"
)

// Tags and values the classification reads (the reference's names).
const (
	TagNoManage        = "node.k8s.amazonaws.com/no_manage"
	InterfaceTypePlain = "interface"
)

// ENIFacts are what EC2 says about an ENI that decide its class. Known is
// false for an ENI EC2 has not described since this was recorded (a store
// from before classes): it is classified on the next EC2 read.
type ENIFacts struct {
	Known         bool   `json:"known,omitempty"`
	InterfaceType string `json:"interfaceType,omitempty"` // EC2's interfaceType; "" taken as "interface"
	NoManage      string `json:"noManage,omitempty"`      // the no_manage tag's value
	HasNoManage   bool   `json:"hasNoManage,omitempty"`   // the tag is present (any value)
	NodeTagged    bool   `json:"nodeTagged,omitempty"`    // instance_id tag is this node
	Created       bool   `json:"created,omitempty"`       // NodeTagged and vpc-cni's description prefix
}

// Classify decides an ENI's class and why, as the reference does and a
// little safer: card > 0, then the primary (always the node's), then a
// non-plain interface type, then no_manage=true, then ours, then an explicit
// no_manage of another value or this node's tag, then MANAGE_UNTAGGED_ENI.
// An ENI the reference would adopt and later delete is Adopted here: it is
// never deleted.
func Classify(f ENIFacts, card, device int, manageUntagged bool) (Class, string) {
	typ := f.InterfaceType
	if typ == "" {
		typ = InterfaceTypePlain
	}
	switch {
	case card != 0:
		return NotOurs, fmt.Sprintf("card %d", card)
	case device == 0:
		return Adopted, "primary"
	case typ != InterfaceTypePlain:
		return NotOurs, typ
	case f.HasNoManage && f.NoManage == "true":
		return NotOurs, "no_manage"
	case f.Created:
		return Ours, "created by vpc-cni"
	case f.HasNoManage:
		return Adopted, "no_manage=" + f.NoManage
	case f.NodeTagged:
		return Adopted, "tagged for this node"
	case manageUntagged:
		return Adopted, "untagged, MANAGE_UNTAGGED_ENI=true"
	}
	return NotOurs, "untagged, MANAGE_UNTAGGED_ENI=false"
}

// NotOurs reports whether the ENI is someone else's: nothing of it is used.
func (e ENI) NotOurs() bool { return e.Class == NotOurs }

// Deletable reports whether a plan may detach and delete the ENI: only one
// vpc-cni created (an ENI recorded before classes counts as its class was
// then: every secondary ENI deletable; a pass classifies it from EC2 before
// it plans).
func (e ENI) Deletable() bool {
	return !e.Primary() && (e.Class == Ours || e.Class == "")
}

// NotOursSlots is how many of card 0's ENI slots not-ours ENIs take: an
// ENI on another card counts against that card's own limit, not card 0's.
func NotOursSlots(s Snapshot) int {
	n := 0
	for _, e := range s.ENIs {
		if e.NotOurs() && e.Card == 0 {
			n++
		}
	}
	return n
}
