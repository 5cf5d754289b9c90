package pool

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

// Random instances, targets (zeros included), both modes, and random pod
// churn with time moving on; every plan is checked as it is applied.
func TestPoolProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := newSim(rt, drawLimits(rt), drawConfig(rt))
		s.lagging = rapid.Bool().Draw(rt, "lagging unassign")
		w := &watch{s: s, rt: rt}
		if rapid.Bool().Draw(rt, "no free /28 from the start") {
			w.step(10)
		}
		for range rapid.IntRange(1, 40).Draw(rt, "steps") {
			w.step(rapid.IntRange(0, 11).Draw(rt, "op"))
		}
		w.steady()
		w.noLoop()
	})
}

func drawLimits(rt *rapid.T) Limits {
	return Limits{
		MaxENIs:    rapid.IntRange(1, 15).Draw(rt, "max ENIs"),
		IPv4PerENI: rapid.IntRange(2, 50).Draw(rt, "IPv4 per ENI"),
	}
}

func drawConfig(rt *rapid.T) Config {
	target := func(name string, hi int) int {
		return rapid.OneOf(rapid.Just(0), rapid.IntRange(1, hi)).Draw(rt, name)
	}
	cool := time.Duration(rapid.IntRange(0, 60).Draw(rt, "cooldown s")) * time.Second
	return Config{
		WarmENITarget:    target("WARM_ENI_TARGET", 3),
		WarmIPTarget:     target("WARM_IP_TARGET", 20),
		MinIPTarget:      target("MINIMUM_IP_TARGET", 40),
		WarmPrefixTarget: target("WARM_PREFIX_TARGET", 3),
		PrefixDelegation: rapid.Bool().Draw(rt, "prefix delegation"),
		MaxENI:           target("MAX_ENI", 15),
		MaxPods:          target("max pods", 300),
		Cooldown:         cool,
		ReleaseDelay:     cool + time.Duration(rapid.IntRange(1, 120).Draw(rt, "delay s"))*time.Second,
	}
}

// watch drives a sim and checks every plan against an independent model.
type watch struct {
	s           *sim
	rt          *rapid.T
	excessSince time.Time // the test's own record of when excess was first seen
}

func (w *watch) step(op int) {
	s, rt := w.s, w.rt
	switch op {
	case 0, 1:
		for range rapid.IntRange(1, 5).Draw(rt, "pods") {
			w.addPod()
		}
	case 2:
		if n := s.count().assigned; n > 0 {
			s.delPod(rapid.IntRange(0, n-1).Draw(rt, "pod"))
		}
	case 3:
		span := int((s.in.Config.ReleaseDelay + s.in.Config.Cooldown) / time.Second)
		s.advance(time.Duration(rapid.IntRange(0, span).Draw(rt, "advance s")) * time.Second)
	case 4:
		w.planAndApply()
	case 5:
		w.steady()
	case 6:
		backOff := time.Duration(rapid.IntRange(0, 600).Draw(rt, "back-off s")) * time.Second
		s.in.Snapshot.GrowBlockedUntil = s.in.Now.Add(backOff)
	case 7:
		s.settle()
	case 8:
		e := &s.in.Snapshot.ENIs[rapid.IntRange(0, len(s.in.Snapshot.ENIs)-1).Draw(rt, "ENI")]
		e.Ready = !e.Ready
	case 9: // the operator changes the targets or the mode
		c := drawConfig(rt)
		c.Cooldown, c.ReleaseDelay = s.in.Config.Cooldown, s.in.Config.ReleaseDelay
		s.in.Config = c
	case 10: // a prefix growth failed: no free /28 in the subnet for a while
		fallback := time.Duration(rapid.IntRange(0, 900).Draw(rt, "no prefixes s")) * time.Second
		s.in.Snapshot.NoPrefixesUntil = s.in.Now.Add(fallback)
	case 11: // ADDs found the pool empty and wait for an inline grow
		s.in.Waiting = rapid.IntRange(0, 20).Draw(rt, "pods waiting")
	}
}

// addPod checks that PickAddress hands out only a usable address on a ready
// ENI outside a releasing block, and finds one whenever one exists.
func (w *watch) addPod() {
	s := w.s
	e, b, a, ok := PickAddress(s.in.Snapshot, s.in.Now, s.in.Config.Cooldown)
	if !ok {
		if n := w.readyFree(); n > 0 {
			w.rt.Fatalf("PickAddress found nothing; %d usable addresses on ready ENIs", n)
		}
		return
	}
	eni, blk := s.in.Snapshot.ENIs[e], s.in.Snapshot.ENIs[e].Blocks[b]
	if !eni.Ready || blk.Releasing || !Usable(blk.Addrs[a], s.in.Now, s.in.Config.Cooldown) {
		w.rt.Fatalf("PickAddress gave %s (%s since %s, ready %v, releasing %v) at %s",
			blk.Addrs[a].IP, blk.Addrs[a].State, blk.Addrs[a].Since, eni.Ready, blk.Releasing, s.in.Now)
	}
	if _, ok := s.addPod(); !ok {
		w.rt.Fatalf("addPod disagrees with PickAddress")
	}
}

func (w *watch) readyFree() int {
	n := 0
	for _, e := range w.s.in.Snapshot.ENIs {
		for _, b := range e.Blocks {
			for _, a := range b.Addrs {
				if e.Ready && !b.Releasing && Usable(a, w.s.in.Now, w.s.in.Config.Cooldown) {
					n++
				}
			}
		}
	}
	return n
}

// steady applies plans until one is empty, then checks that planning again
// at the same time still asks for nothing.
func (w *watch) steady() {
	for range 100 {
		if !w.planAndApply().grew && w.s.plan().Empty() {
			if again := w.planAndApply(); again.grew || again.released {
				w.rt.Fatalf("a pool at its targets planned again")
			}
			return
		}
	}
	w.rt.Fatalf("no steady state after 100 plans")
}

// noLoop lets time pass with no pod change, in steps of a third of the
// release delay: once something is released, nothing may grow again, and
// the pool settles. A prefix fallback in force ends within the first rounds,
// so its end (prefix growth, then excess /32s) is crossed too.
func (w *watch) noLoop() {
	s := w.s
	released := false
	var last planKind
	s.in.Snapshot.GrowBlockedUntil = time.Time{} // the back-off is over
	round := (s.in.Config.ReleaseDelay+s.in.Config.Cooldown)/3 + time.Second
	if s.in.Now.Before(s.in.Snapshot.NoPrefixesUntil) {
		rounds := rapid.IntRange(0, 4).Draw(w.rt, "fallback rounds left")
		s.in.Snapshot.NoPrefixesUntil = s.in.Now.Add(time.Duration(rounds)*round - time.Second)
	}
	for range 15 {
		s.advance(round)
		s.settle()
		last = w.planAndApply()
		if last.grew && released {
			w.rt.Fatalf("grew after a release with no pod change")
		}
		released = released || last.released
	}
	if last.grew || last.released {
		w.rt.Fatalf("still changing after 15 rounds with no pod change")
	}
}
