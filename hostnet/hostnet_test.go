package hostnet

import (
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/google/nftables"
	"github.com/vishvananda/netlink"

	"vpc-cni/internal/testsupport/testenv"
)

func testConfig() Config {
	return Config{
		PrimaryIf: "eth0", PrimaryIP: netip.MustParseAddr("100.64.0.10"),
		VPCCIDRs:    []netip.Prefix{netip.MustParsePrefix("100.64.0.0/16")},
		ExcludeSNAT: []netip.Prefix{netip.MustParsePrefix("100.99.0.0/16")},
		Randomize:   RandomPRNG, NodePort: true, Mark: DefaultConnMark, VethPrefix: "eni",
	}
}

// inNode runs fn in a fresh namespace with a primary link eth0, deleted afterwards.
func inNode(t *testing.T, fn func()) {
	t.Helper()
	n := testenv.NewNetNS(t)
	err := n.Do(func(ns.NetNS) error {
		mac, _ := net.ParseMAC("02:00:00:00:00:01")
		// A veth: this kernel may lack the dummy driver.
		eth0 := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "eth0", HardwareAddr: mac}, PeerName: "peer0"}
		if err := netlink.LinkAdd(eth0); err != nil {
			return err
		}
		fn()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func mustEnsure(t *testing.T, cfg Config) []string {
	t.Helper()
	repaired, err := Ensure(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return repaired
}

func mustCheck(t *testing.T, cfg Config) Status {
	t.Helper()
	st, err := Check(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func chainNames(t *testing.T) []string {
	t.Helper()
	c, _ := nftables.New()
	chains, err := c.ListChainsOfTableFamily(nftables.TableFamilyIPv4)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ch := range chains {
		if ch.Table.Name == TableName {
			out = append(out, ch.Name)
		}
	}
	slices.Sort(out)
	return out
}

func TestPrivilegedEnsureIsIdempotentAndRepairsAFlush(t *testing.T) {
	inNode(t, func() {
		cfg := testConfig()
		if name, err := PrimaryLink("02:00:00:00:00:01"); err != nil || name != "eth0" {
			t.Fatalf("PrimaryLink = %q, %v; want eth0", name, err)
		}
		if st := mustCheck(t, cfg); st.InPlace() {
			t.Fatalf("fresh namespace reported in place: %+v", st)
		}
		if r := mustEnsure(t, cfg); len(r) != 3 {
			t.Fatalf("first Ensure repaired %v; want table, rule and rp_filter", r)
		}
		if st := mustCheck(t, cfg); !st.InPlace() {
			t.Fatalf("after Ensure: %+v", st)
		}
		if r := mustEnsure(t, cfg); len(r) != 0 {
			t.Fatalf("second Ensure repaired %v; want nothing", r)
		}
		// Another program flushes every nftables rule and deletes our ip rule.
		c, _ := nftables.New()
		c.FlushRuleset()
		if err := c.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := netlink.RuleDel(fwmarkRule(DefaultConnMark)); err != nil {
			t.Fatal(err)
		}
		if st := mustCheck(t, cfg); st.Table || st.Fwmark {
			t.Fatalf("after the flush: %+v", st)
		}
		if r := mustEnsure(t, cfg); len(r) != 2 {
			t.Fatalf("Ensure after flush repaired %v; want table and rule", r)
		}
		if st := mustCheck(t, cfg); !st.InPlace() {
			t.Fatalf("after repair: %+v", st)
		}
	})
}

func TestPrivilegedAChangedConfigurationRebuildsTheTable(t *testing.T) {
	inNode(t, func() {
		cfg := testConfig()
		mustEnsure(t, cfg)
		if got := chainNames(t); !slices.Equal(got, []string{chainEgress, chainMark, chainPods, chainSNAT}) {
			t.Fatalf("chains %v", got)
		}
		cfg.ExternalSNAT = true
		if st := mustCheck(t, cfg); st.Table {
			t.Fatal("a table built for SNAT reported in place for external SNAT")
		}
		mustEnsure(t, cfg)
		if got := chainNames(t); !slices.Equal(got, []string{chainMark}) {
			t.Fatalf("external SNAT: chains %v; want only %s", got, chainMark)
		}
		cfg.NodePort = false
		mustEnsure(t, cfg)
		if got := chainNames(t); len(got) != 0 {
			t.Fatalf("nothing wanted: chains %v", got)
		}
		if st := mustCheck(t, cfg); !st.InPlace() {
			t.Fatalf("nothing wanted, nothing there: %+v", st)
		}
	})
}

func TestPrivilegedRemoveDeletesEverything(t *testing.T) {
	inNode(t, func() {
		cfg := testConfig()
		mustEnsure(t, cfg)
		removed, err := Remove()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(removed, "nftables table ip "+TableName) || !slices.ContainsFunc(removed, func(r string) bool {
			return strings.HasPrefix(r, "ip rule fwmark")
		}) {
			t.Errorf("Remove names %q; want the table and the fwmark rule", removed)
		}
		if got := chainNames(t); len(got) != 0 {
			t.Fatalf("chains left: %v", got)
		}
		rules, err := fwmarkRules()
		if err != nil || len(rules) != 0 {
			t.Fatalf("fwmark rules left: %v, %v", rules, err)
		}
		if removed, err := Remove(); err != nil || len(removed) != 0 {
			t.Fatalf("second Remove: %q, %v; want nothing removed", removed, err)
		}
	})
}

func TestValidateNamesTheProblem(t *testing.T) {
	cfg := testConfig()
	cfg.Randomize = "fully"
	if err := cfg.Validate(); err == nil {
		t.Fatal("accepted an unknown randomisation")
	}
	cfg = testConfig()
	cfg.ExcludeSNAT = append(cfg.ExcludeSNAT, netip.MustParsePrefix("fd00::/64"))
	if err := cfg.Validate(); err == nil {
		t.Fatal("accepted an IPv6 CIDR")
	}
}

// AWS_EXTERNAL_SERVICE_CIDRS: one `to <cidr> lookup main` rule at 1535 per
// CIDR; Ensure repairs a deleted one and removes one no longer configured.
func TestPrivilegedExternalServiceRulesFollowTheKnob(t *testing.T) {
	inNode(t, func() {
		a, b := netip.MustParsePrefix("100.100.0.0/16"), netip.MustParsePrefix("100.101.7.0/24")
		cfg := testConfig()
		cfg.ExternalServices = []netip.Prefix{a, b}
		mustEnsure(t, cfg)
		if got := serviceDsts(t); !slices.Equal(got, []netip.Prefix{a, b}) {
			t.Fatalf("service rules %v, want %v", got, []netip.Prefix{a, b})
		}
		if st := mustCheck(t, cfg); !st.InPlace() {
			t.Fatalf("after Ensure: %+v", st)
		}
		rules, _ := serviceRules()
		if err := netlink.RuleDel(&rules[0]); err != nil {
			t.Fatal(err)
		}
		if st := mustCheck(t, cfg); st.Services || st.InPlace() {
			t.Fatalf("a deleted rule is not seen: %+v", st)
		}
		if r := mustEnsure(t, cfg); !slices.Equal(r, []string{"ip rule to " + a.String()}) {
			t.Fatalf("repair rewrote %v, want the deleted rule", r)
		}
		cfg.ExternalServices = []netip.Prefix{b}
		mustEnsure(t, cfg)
		if got := serviceDsts(t); !slices.Equal(got, []netip.Prefix{b}) {
			t.Fatalf("after dropping %s: rules %v", a, got)
		}
		if r := mustEnsure(t, cfg); len(r) != 0 {
			t.Fatalf("Ensure at rest rewrote %v", r)
		}
		if _, err := Remove(); err != nil {
			t.Fatal(err)
		}
		if got := serviceDsts(t); len(got) != 0 {
			t.Fatalf("after Remove: %v", got)
		}
	})
}

func serviceDsts(t *testing.T) []netip.Prefix {
	t.Helper()
	rules, err := serviceRules()
	if err != nil {
		t.Fatal(err)
	}
	var out []netip.Prefix
	for _, r := range rules {
		out = append(out, ruleDst(r))
	}
	return sortedPrefixes(out)
}
