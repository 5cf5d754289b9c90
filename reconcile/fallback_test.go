package reconcile

import (
	"strings"
	"testing"
	"time"

	"vpc-cni/pool"
)

// With prefix delegation on and a subnet that has addresses but no free /28,
// the pass falls back to single IPs at once: no growth back-off, the
// addresses arrive as /32s within the instance's slots, pods can take them,
// the store agrees with EC2, and the fallback is persisted for later passes.
func TestPrefixFallbackGrowsSingleIPs(t *testing.T) {
	n := newNode(t, "t3.small", env{"ENABLE_PREFIX_DELEGATION": "true", "WARM_PREFIX_TARGET": "1"})
	n.sim.FragmentSubnet()
	rep := n.pass()
	if len(rep.Failed) != 1 || !strings.Contains(rep.Failed[0], "InsufficientCidrBlocks") {
		t.Errorf("failed %v; want the one prefix assign refused for want of a /28", rep.Failed)
	}
	if got := strings.Count(strings.Join(rep.Calls, " "), "AssignPrivateIpAddresses"); got != 2 {
		t.Errorf("calls %v: want 2 AssignPrivateIpAddresses on the primary ENI (prefix, then singles)", rep.Calls)
	}
	if !strings.Contains(rep.Plan.Figures.Policy, "single IPs") {
		t.Errorf("policy %q does not show the fallback", rep.Plan.Figures.Policy)
	}
	snap := n.snapshot()
	if want := n.clock.Now().Add(prefixFallback); !snap.NoPrefixesUntil.Equal(want) || !snap.GrowBlockedUntil.IsZero() {
		t.Errorf("no prefixes until %v (want %v), growth blocked until %v (want never)",
			snap.NoPrefixesUntil, want, snap.GrowBlockedUntil)
	}
	// t3.small: 3 ENIs of 3 slots; WARM_PREFIX_TARGET=1 asks 16 single IPs.
	if enis, addrs := simHeld(n.sim); enis != 3 || addrs != 9 {
		t.Errorf("EC2 holds %d ENIs, %d addresses; want 3 and 9", enis, addrs)
	}
	for _, e := range snap.ENIs {
		for _, b := range e.Blocks {
			if b.IsPrefix() {
				t.Errorf("%s got prefix %s in a fragmented subnet", e.ID, b.CIDR)
			}
		}
	}
	checkAgrees(t, n.sim, n.st)
	n.converge(3)
	for i := range 9 {
		if _, err := n.addPod(); err != nil {
			t.Fatalf("pod %d: %v", i+1, err)
		}
	}
	checkAgrees(t, n.sim, n.st)
}

// Within the fallback growth stays in single IPs; once it is over and the
// subnet has whole /28s again, prefix growth resumes and the /32s, now
// excess, go back after the release delay.
func TestPrefixFallbackEndsAndPrefixesResume(t *testing.T) {
	n := newNode(t, "m5.4xlarge", env{"ENABLE_PREFIX_DELEGATION": "true", "WARM_PREFIX_TARGET": "1", "MAX_ENI": "1"})
	n.sim.FragmentSubnet()
	n.pass()
	for range 3 {
		if _, err := n.addPod(); err != nil {
			t.Fatal(err)
		}
	}
	n.clock.Advance(time.Minute)
	n.converge(3)
	if got := blockBits(n.snapshot()); got[32] != 19 || got[28] != 0 {
		t.Fatalf("3 pods within the fallback: %v blocks by size; want 19 /32s", got)
	}
	for _, a := range n.assignments() {
		n.delPod(a.Key)
	}
	n.sim.SetSubnetFree(1 << 20) // the other tenants left: whole /28s again
	n.clock.Advance(prefixFallback)
	n.converge(3)
	if got := blockBits(n.snapshot()); got[32] != 19 || got[28] != 1 {
		t.Fatalf("fallback over: %v blocks by size; want a prefix beside the 19 /32s", got)
	}
	n.clock.Advance(pool.DefaultReleaseDelay)
	n.converge(3)
	if got := blockBits(n.snapshot()); got[32] != 0 || got[28] != 1 {
		t.Errorf("after the release delay: %v blocks by size; want the prefix only", got)
	}
	checkAgrees(t, n.sim, n.st)
}

// blockBits counts the pool's blocks by prefix length.
func blockBits(snap pool.Snapshot) map[int]int {
	out := map[int]int{}
	for _, e := range snap.ENIs {
		for _, b := range e.Blocks {
			out[b.CIDR.Bits()]++
		}
	}
	return out
}
