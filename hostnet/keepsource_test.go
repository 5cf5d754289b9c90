package hostnet

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
)

// The sources of KeepSource return before the egress mark and before SNAT,
// in both chains; a changed list is stale and rebuilt.
func TestPrivilegedKeepSourceReturnsBeforeMarkAndSNAT(t *testing.T) {
	inNode(t, func() {
		a, b := netip.MustParsePrefix("100.64.80.5/32"), netip.MustParsePrefix("100.64.80.16/28")
		cfg := testConfig()
		cfg.KeepSource = []netip.Prefix{a, b}
		mustEnsure(t, cfg)
		for _, chain := range []string{chainSNAT, chainEgress} {
			got := sourceReturns(t, chain)
			if len(got) != 2 || got[0] != a.Addr() || got[1] != b.Addr() {
				t.Fatalf("chain %s returns for sources %v, want %s and %s", chain, got, a, b)
			}
		}
		if st := mustCheck(t, cfg); !st.InPlace() {
			t.Fatalf("after Ensure: %+v", st)
		}
		cfg.KeepSource = []netip.Prefix{a}
		if st := mustCheck(t, cfg); st.InPlace() {
			t.Fatal("a changed KeepSource reads as in place")
		}
		mustEnsure(t, cfg)
		if got := sourceReturns(t, chainSNAT); len(got) != 1 {
			t.Fatalf("after the change: %v", got)
		}
	})
}

// sourceReturns lists the source addresses the chain's rules compare
// (IPv4 header offset 12) before a return verdict.
func sourceReturns(t *testing.T, chain string) []netip.Addr {
	t.Helper()
	c, err := nftables.New()
	if err != nil {
		t.Fatal(err)
	}
	tab := &nftables.Table{Family: nftables.TableFamilyIPv4, Name: TableName}
	rules, err := c.GetRules(tab, &nftables.Chain{Name: chain, Table: tab})
	if err != nil {
		t.Fatal(err)
	}
	var out []netip.Addr
	for _, r := range rules {
		src, ret := false, false
		var addr netip.Addr
		for _, e := range r.Exprs {
			switch x := e.(type) {
			case *expr.Payload:
				src = x.Offset == 12
			case *expr.Cmp:
				if src && len(x.Data) == 4 {
					addr = netip.AddrFrom4([4]byte(x.Data))
				}
			case *expr.Verdict:
				ret = x.Kind == expr.VerdictReturn
			}
		}
		if ret && addr.IsValid() && !bytes.Equal(addr.AsSlice(), nil) {
			out = append(out, addr)
		}
	}
	return out
}
