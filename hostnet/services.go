package hostnet

import (
	"fmt"
	"net"
	"net/netip"
	"slices"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// PrioExternalService is the priority of `to <cidr> lookup main` for
// AWS_EXTERNAL_SERVICE_CIDRS: just before the from-pod rules (1536), so a
// pod on a secondary ENI reaches those CIDRs through the main table, as the
// reference.
const PrioExternalService = 1535

// serviceRules lists the rules at PrioExternalService that send a
// destination to main: ours (a CIDR removed from the knob included).
func serviceRules() ([]netlink.Rule, error) {
	rules, err := netlink.RuleList(unix.AF_INET)
	if err != nil {
		return nil, fmt.Errorf("listing ip rules: %w", err)
	}
	var out []netlink.Rule
	for _, r := range rules {
		if r.Priority == PrioExternalService && r.Dst != nil && r.Src == nil && r.Mark == 0 &&
			(r.Table == unix.RT_TABLE_MAIN || r.Table == 0) {
			out = append(out, r)
		}
	}
	return out, nil
}

func ruleDst(r netlink.Rule) netip.Prefix {
	a, _ := netip.AddrFromSlice(r.Dst.IP.To4())
	bits, _ := r.Dst.Mask.Size()
	return netip.PrefixFrom(a, bits)
}

// servicesInPlace reports whether exactly the wanted rules are there.
func servicesInPlace(want []netip.Prefix) (bool, error) {
	rules, err := serviceRules()
	if err != nil {
		return false, err
	}
	have := make([]netip.Prefix, 0, len(rules))
	for _, r := range rules {
		have = append(have, ruleDst(r))
	}
	return sameSet(have, want), nil
}

func sameSet(a, b []netip.Prefix) bool {
	a, b = sortedPrefixes(a), sortedPrefixes(b)
	return slices.Equal(a, b)
}

func sortedPrefixes(ps []netip.Prefix) []netip.Prefix {
	out := slices.Clone(ps)
	slices.SortFunc(out, func(x, y netip.Prefix) int {
		if c := x.Addr().Compare(y.Addr()); c != 0 {
			return c
		}
		return x.Bits() - y.Bits()
	})
	return slices.Compact(out)
}

// syncServiceRules leaves one `to <cidr> lookup main` rule per wanted CIDR
// and none for a CIDR no longer wanted; it reports what it changed.
func syncServiceRules(want []netip.Prefix) (changed []string, err error) {
	rules, err := serviceRules()
	if err != nil {
		return nil, err
	}
	have := map[netip.Prefix]bool{}
	for _, r := range rules {
		dst := ruleDst(r)
		if slices.Contains(want, dst) && !have[dst] {
			have[dst] = true
			continue
		}
		if err := netlink.RuleDel(&r); err != nil {
			return changed, fmt.Errorf("deleting ip rule to %s lookup main prio %d: %w", dst, PrioExternalService, err)
		}
		changed = append(changed, "removed ip rule to "+dst.String())
	}
	for _, p := range sortedPrefixes(want) {
		if have[p] {
			continue
		}
		r := netlink.NewRule()
		r.Family, r.Priority, r.Table = unix.AF_INET, PrioExternalService, unix.RT_TABLE_MAIN
		r.Dst = &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), 32)}
		if err := netlink.RuleAdd(r); err != nil {
			return changed, fmt.Errorf("adding ip rule to %s lookup main prio %d: %w", p, PrioExternalService, err)
		}
		changed = append(changed, "ip rule to "+p.String())
	}
	return changed, nil
}
