package netns

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

// The delegate-mode rules: both for a secondary ENI's address, only the
// to-rule for the primary's (a stale from-rule goes), none after clearing.
func TestPrivilegedSetAndClearPodRules(t *testing.T) {
	node := newNode(t)
	ip := netip.MustParseAddr("100.64.7.9")
	set := func(table int) {
		t.Helper()
		inNS(t, node, func() error { return SetPodRules(ip, table) })
	}
	set(3)
	set(3) // idempotent: no duplicates
	want := []RuleInfo{{Priority: PrioToPod, IP: ip, Table: MainTable}, {Priority: PrioFromPod, IP: ip, Table: 3}}
	if got := listHost(t, node).Rules; !reflect.DeepEqual(got, want) {
		t.Fatalf("rules %+v, want %+v", got, want)
	}
	inNS(t, node, func() error { return CheckPodRules(ip, 3) })
	set(0)
	if got := listHost(t, node).Rules; !reflect.DeepEqual(got, want[:1]) {
		t.Fatalf("after moving to the primary ENI: %+v, want only the to-rule", got)
	}
	inNS(t, node, func() error {
		if err := CheckPodRules(ip, 3); err == nil || !strings.Contains(err.Error(), "1536") {
			t.Errorf("CheckPodRules with the from-rule gone: %v, want an error naming it", err)
		}
		return nil
	})
	inNS(t, node, func() error { return ClearPodRules(ip) })
	inNS(t, node, func() error { return ClearPodRules(ip) })
	if got := listHost(t, node).Rules; len(got) != 0 {
		t.Fatalf("rules left after clearing: %+v", got)
	}
}

func TestPrivilegedSetAndClearPodRulesInIPv6(t *testing.T) {
	node := newNode6(t)
	ip := netip.MustParseAddr("fd00:7::9")
	inNS(t, node, func() error { return SetPodRules(ip, 3) })
	inNS(t, node, func() error { return SetPodRules(ip, 3) })
	inNS(t, node, func() error { return CheckPodRules(ip, 3) })
	inNS(t, node, func() error { return ClearPodRules(ip) })
	inNS(t, node, func() error { return leftovers6(ip) })
	inNS(t, node, func() error {
		if err := CheckPodRules(ip, 3); err == nil {
			t.Error("CheckPodRules passed with the rules cleared")
		}
		return nil
	})
}
