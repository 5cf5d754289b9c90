package pool

import (
	"strings"
	"testing"
	"time"
)

// fullT3Small is the node: a t3.small (3 ENIs of 4 addresses) whose
// nine pod addresses are all taken.
func fullT3Small(t *testing.T) *sim {
	s := newSim(t, t3small, Config{WarmENITarget: 1, Cooldown: 30 * time.Second})
	s.steady()
	s.addPods(9)
	return s
}

func wantFull(t *testing.T, got Fullness, limit Limit, reason, frees string) {
	t.Helper()
	if !got.Full || got.Limit != limit || !strings.Contains(got.Reason, reason) || !strings.Contains(got.Frees, frees) {
		t.Fatalf("got %+v\nwant full by %s, reason with %q, frees with %q", got, limit, reason, frees)
	}
}

func TestExplainAFreeOrGrowablePoolIsNotFull(t *testing.T) {
	s := newSim(t, t3small, Config{WarmENITarget: 1, Cooldown: 30 * time.Second})
	s.steady()
	if got := Explain(s.in, ""); got.Full {
		t.Fatalf("free addresses: %+v", got)
	}
	s.addPods(3) // the primary ENI is full; a second ENI can still be made
	for _, a := range s.addrs() {
		if a.State == Free {
			a.State, a.Owner = Assigned, "x/eth0"
		}
	}
	if got := Explain(s.in, ""); got.Full {
		t.Fatalf("an ENI can still be created: %+v", got)
	}
}

func TestExplainEveryENIFull(t *testing.T) {
	s := fullT3Small(t)
	wantFull(t, Explain(s.in, ""), LimitENIs, "the node is full: 3 ENIs of 3 in use, every address held (9 assigned, 0 cooling)",
		"a pod's address is free again IP_COOLDOWN_PERIOD after the pod is deleted")
}

func TestExplainNamesWhenCoolingAddressesFree(t *testing.T) {
	s := fullT3Small(t)
	s.delPod(0)
	s.advance(10 * time.Second)
	s.delPod(0)
	wantFull(t, Explain(s.in, ""), LimitENIs, "(7 assigned, 2 cooling)",
		"2 cooling addresses are free again at 2026-11-30T12:00:30Z (IP_COOLDOWN_PERIOD)")
	s.advance(20 * time.Second)
	if got := Explain(s.in, ""); got.Full {
		t.Fatalf("the first cooled address is free: %+v", got)
	}
}

func TestExplainMaxPods(t *testing.T) {
	s := newSim(t, t3small, Config{WarmIPTarget: 1, MaxPods: 2, Cooldown: 30 * time.Second})
	s.steady()
	s.addPods(2)
	wantFull(t, Explain(s.in, ""), LimitMaxPods, "it holds 2 addresses, its max pods (2; 2 assigned, 0 cooling)", "after the pod is deleted")
}

func TestExplainSubnetBackOff(t *testing.T) {
	s := newSim(t, t3small, Config{WarmIPTarget: 1, Cooldown: 30 * time.Second})
	s.steady()
	s.addPods(1)
	s.addPod()
	s.in.Snapshot.GrowBlockedUntil, s.in.Snapshot.GrowBlockedWhy = s.in.Now.Add(time.Minute), "InsufficientFreeAddressesInSubnet"
	got := Explain(s.in, "")
	wantFull(t, got, LimitSubnet, "the subnet has none to give: InsufficientFreeAddressesInSubnet",
		"growth is tried again at 2026-11-30T12:01:00Z")
	if !got.Until.Equal(s.in.Snapshot.GrowBlockedUntil) {
		t.Fatalf("until %v, want the back-off's end", got.Until)
	}
}

func TestExplainHostSideNotReady(t *testing.T) {
	s := fullT3Small(t)
	e := s.eniAt(2)
	e.Ready = false
	for i := range e.Blocks {
		e.Blocks[i].Addrs[0].State = Free
	}
	wantFull(t, Explain(s.in, ""), LimitHostSide, "3 addresses wait on an ENI whose host side is not set up yet", "the next reconcile pass")
}

func TestExplainGrowthSwitchedOff(t *testing.T) {
	s := newSim(t, t3small, Config{WarmIPTarget: 1, Cooldown: 30 * time.Second})
	s.steady()
	s.addPods(1)
	s.addPod()
	wantFull(t, Explain(s.in, "ENABLE_IMDS_ONLY_MODE=true"), LimitNoGrowth,
		"the pool does not grow: ENABLE_IMDS_ONLY_MODE=true (2 assigned, 0 cooling)", "after the pod is deleted")
}

func TestExplainIPv6OnlyIsNeverFullOfIPv4(t *testing.T) {
	s := fullT3Small(t)
	s.in.Config.IPv4Off = true
	if got := Explain(s.in, ""); got.Full {
		t.Fatalf("IPv6-only pods take no IPv4: %+v", got)
	}
}
