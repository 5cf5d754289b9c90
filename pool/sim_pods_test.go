package pool

import (
	"fmt"
	"net/netip"
	"time"
)

// addPod gives a new pod an address with PickAddress; false if none is free.
func (s *sim) addPod() (netip.Addr, bool) {
	e, b, a, ok := PickAddress(s.in.Snapshot, s.in.Now, s.in.Config.Cooldown)
	if !ok {
		return netip.Addr{}, false
	}
	ad := &s.in.Snapshot.ENIs[e].Blocks[b].Addrs[a]
	s.podCount++
	ad.State, ad.Since, ad.Owner = Assigned, s.in.Now, fmt.Sprintf("pod-%d/eth0", s.podCount)
	return ad.IP, true
}

// addPods adds n pods, bringing the pool to steady state after each.
func (s *sim) addPods(n int) {
	s.t.Helper()
	for range n {
		if _, ok := s.addPod(); !ok {
			s.t.Fatalf("no address for a pod")
		}
		s.steady()
	}
}

// delPod frees the k-th assigned address (in snapshot order); it cools.
func (s *sim) delPod(k int) bool {
	for _, ad := range s.addrs() {
		if ad.State == Assigned {
			if k == 0 {
				ad.State, ad.Since, ad.Owner = Cooling, s.in.Now, ""
				return true
			}
			k--
		}
	}
	return false
}

func (s *sim) addrs() []*Addr {
	var out []*Addr
	for i := range s.in.Snapshot.ENIs {
		for j := range s.in.Snapshot.ENIs[i].Blocks {
			b := &s.in.Snapshot.ENIs[i].Blocks[j]
			for k := range b.Addrs {
				out = append(out, &b.Addrs[k])
			}
		}
	}
	return out
}

// counts is the test's own count of the pool, independent of Compute.
type counts struct{ free, cooling, assigned, slots int }

func (c counts) held() int { return c.free + c.cooling + c.assigned }

func (s *sim) count() counts {
	var c counts
	for _, e := range s.in.Snapshot.ENIs {
		c.slots += len(e.Blocks)
		for _, b := range e.Blocks {
			for _, ad := range b.Addrs {
				switch {
				case b.Releasing:
				case ad.State == Free || ad.State == Cooling && !s.in.Now.Before(ad.Since.Add(s.in.Config.Cooldown)):
					c.free++
				case ad.State == Cooling:
					c.cooling++
				case ad.State == Assigned:
					c.assigned++
				}
			}
		}
	}
	return c
}

func (s *sim) advance(d time.Duration) { s.in.Now = s.in.Now.Add(d) }
