package pool

import (
	"fmt"
	"time"
)

// Limit names what keeps a full node from giving a pod an address.
type Limit string

const (
	LimitMaxPods  Limit = "max-pods"  // the node holds max pods' worth of addresses
	LimitENIs     Limit = "eni-limit" // every ENI the node may use is attached and full
	LimitSubnet   Limit = "subnet"    // growth is backed off: the subnet had no free address
	LimitHostSide Limit = "host-side" // free addresses wait for their ENI's host side
	LimitNoGrowth Limit = "no-growth" // the operator's configuration stops growth
)

// AllLimits lists every Limit, for a metric that shows each one.
var AllLimits = []Limit{LimitMaxPods, LimitENIs, LimitSubnet, LimitHostSide, LimitNoGrowth}

// Fullness says whether a pod arriving now can get an IPv4 address from the
// pool, or from a pool the pass can grow, and if not, what is full and what
// frees an address. A full node is load, not breakage: it stays ready and
// its ADDs fail with "try again later".
type Fullness struct {
	Held   int       `json:"held"` // pod addresses the node holds, in any state
	Full   bool      `json:"full"`
	Limit  Limit     `json:"limit,omitempty"`
	Reason string    `json:"reason,omitempty"` // what is full, with the figures
	Frees  string    `json:"frees,omitempty"`  // what gives a pod an address again
	Until  time.Time `json:"until,omitzero"`   // when an address frees by itself (cooldown, back-off), if known
}

// Message is the one-line form: "the node is full: ...; ...".
func (f Fullness) Message() string {
	if !f.Full {
		return "an address is free or can be had"
	}
	return f.Reason + "; " + f.Frees
}

// Explain judges in (Waiting is raised to one: the pod asking). noGrowth is
// why the operator's configuration stops growth ("" when it grows).
func Explain(in Input, noGrowth string) Fullness {
	if in.Config.IPv4Off {
		return Fullness{}
	}
	held := 0
	forPods(in, func(ENI, Addr) { held++ })
	if _, _, _, ok := PickPodAddress(in.Snapshot, in.Now, in.Config); ok {
		return Fullness{Held: held}
	}
	in.Waiting = max(in.Waiting, 1)
	plan := Compute(in)
	f := plan.Figures
	states := fmt.Sprintf("%d assigned, %d cooling", f.Assigned, f.Cooling)
	cooled, until := coolingEnds(in)
	frees := "a pod's address is free again IP_COOLDOWN_PERIOD after the pod is deleted"
	if cooled > 0 {
		frees = fmt.Sprintf("%s free again at %s (IP_COOLDOWN_PERIOD); %s", plural(cooled, "cooling address is", "cooling addresses are"),
			until.UTC().Format(time.RFC3339), frees)
	}
	full := Fullness{Held: held, Full: true, Frees: frees, Until: until}
	switch {
	case f.MaxPods > 0 && f.Total >= f.MaxPods:
		full.Limit = LimitMaxPods
		full.Reason = fmt.Sprintf("the node is full: it holds %s, its max pods (%d; %s)", plural(f.Total, "address", "addresses"), f.MaxPods, states)
	case noGrowth != "":
		full.Limit = LimitNoGrowth
		full.Reason = fmt.Sprintf("no free address and the pool does not grow: %s (%s)", noGrowth, states)
	case grows(plan):
		return Fullness{Held: held}
	case in.Now.Before(in.Snapshot.GrowBlockedUntil):
		full.Limit, full.Until = LimitSubnet, in.Snapshot.GrowBlockedUntil
		full.Reason = fmt.Sprintf("no free address and the subnet has none to give: %s (%s)", in.Snapshot.GrowBlockedWhy, states)
		full.Frees = fmt.Sprintf("growth is tried again at %s; %s", in.Snapshot.GrowBlockedUntil.UTC().Format(time.RFC3339), frees)
	case unreadyFree(in) > 0:
		full.Limit, full.Until = LimitHostSide, time.Time{}
		full.Reason = fmt.Sprintf("no free address ready: %s on an ENI whose host side is not set up yet",
			plural(unreadyFree(in), "address waits", "addresses wait"))
		full.Frees = "the next reconcile pass sets up the ENI's host side"
	default:
		full.Limit = LimitENIs
		full.Reason = fmt.Sprintf("the node is full: %s of %d in use, every address held (%s)",
			plural(f.ENIs, "ENI", "ENIs"), f.MaxENIs, states)
	}
	return full
}

func grows(p Plan) bool {
	for _, a := range p.Actions {
		if a.Kind == CreateENI || a.Kind == Assign {
			return true
		}
	}
	return false
}

// coolingEnds counts the cooling addresses pods may have and when the first
// of them is free again.
func coolingEnds(in Input) (n int, first time.Time) {
	forPods(in, func(_ ENI, a Addr) {
		if a.State != Cooling {
			return
		}
		n++
		if end := a.Since.Add(in.Config.Cooldown); first.IsZero() || end.Before(first) {
			first = end
		}
	})
	return n, first
}

// unreadyFree counts usable addresses on ENIs whose host side is not ready.
func unreadyFree(in Input) (n int) {
	forPods(in, func(e ENI, a Addr) {
		if !e.Ready && Usable(a, in.Now, in.Config.Cooldown) {
			n++
		}
	})
	return n
}

// forPods visits every address of the ENIs pods may take from, ready or not.
func forPods(in Input, visit func(ENI, Addr)) {
	for _, e := range in.Snapshot.ENIs {
		if !podENI(e, in.Config) {
			continue
		}
		for _, b := range e.Blocks {
			if b.Releasing {
				continue
			}
			for _, a := range b.Addrs {
				visit(e, a)
			}
		}
	}
}

func podENI(e ENI, c Config) bool {
	return !e.NotOurs() && e.Card == 0 && e.DeviceIndex >= FirstPodDevice(c) && e.ServesPool(c.Profile) && e.GroupsDrift == ""
}
