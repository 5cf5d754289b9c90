package pool

import (
	"net/netip"
	"testing"
	"time"
)

// benchNode builds a node of enis ENIs, each with slots blocks (/32s, or /28
// prefixes), whose lowest assigned addresses hold pods, as PickAddress packs
// them. It returns the snapshot and its address count.
func benchNode(enis, slots int, prefix bool, assigned int) (Snapshot, int) {
	s := &sim{in: Input{Now: startTime},
		nextIP: netip.MustParseAddr("100.64.0.0"), nextPfx: netip.MustParseAddr("100.96.0.0")}
	snap := Snapshot{}
	n := 0
	for d := range enis {
		e := s.newENI(d)
		for range slots {
			b := s.block(prefix)
			for k := range b.Addrs {
				if n < assigned {
					b.Addrs[k].State = Assigned
				}
				n++
			}
			e.Blocks = append(e.Blocks, b)
		}
		snap.ENIs = append(snap.ENIs, e)
	}
	return snap, n
}

type benchCase struct {
	name        string
	enis, slots int
	prefix      bool
}

var computeCases = []benchCase{
	{"10_addresses", 1, 10, false},
	{"1000_addresses", 10, 100, false},
	{"10000_addresses", 10, 1000, false},
	{"p3dn.24xlarge_full/secondary-ip", 15, 49, false},
	{"p3dn.24xlarge_full/prefix", 15, 49, true},
}

// BenchmarkCompute plans for a node half full of pods, at its target (the
// usual pass: nothing to do) and with all the rest excess past its delay
// (the most work a pass can do: every free block tried and released).
func BenchmarkCompute(b *testing.B) {
	for _, bc := range computeCases {
		for _, state := range []string{"at-target", "release"} {
			b.Run(bc.name+"/"+state, func(b *testing.B) {
				snap, n := benchNode(bc.enis, bc.slots, bc.prefix, 0)
				snap, n = benchNode(bc.enis, bc.slots, bc.prefix, n/2)
				c := Defaults()
				c.PrefixDelegation, c.MaxPods = bc.prefix, 2*n
				c.WarmIPTarget = n - n/2
				if state == "release" {
					c.WarmIPTarget = 1
					snap.ExcessSince = startTime.Add(-time.Hour)
				}
				in := Input{Limits: Limits{MaxENIs: bc.enis, IPv4PerENI: bc.slots + 1}, Config: c, Snapshot: snap, Now: startTime}
				p := Compute(in)
				if (state == "release") == p.Empty() {
					b.Fatalf("unexpected plan: %+v", p.Figures)
				}
				for b.Loop() {
					Compute(in)
				}
				perAddr := float64(b.Elapsed().Nanoseconds()) / float64(b.N) / float64(n)
				b.ReportMetric(perAddr, "ns/addr")
				b.ReportMetric(float64(n), "addrs")
				b.ReportMetric(float64(len(p.Actions)), "actions")
			})
		}
	}
}

// BenchmarkPickAddress takes the worst case: only the last address is free.
func BenchmarkPickAddress(b *testing.B) {
	for _, bc := range computeCases[:3] {
		b.Run(bc.name, func(b *testing.B) {
			_, n := benchNode(bc.enis, bc.slots, false, 0)
			snap, _ := benchNode(bc.enis, bc.slots, false, n-1)
			for b.Loop() {
				if _, _, _, ok := PickAddress(snap, startTime, DefaultCooldown); !ok {
					b.Fatal("nothing picked")
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/addr")
		})
	}
}
