package hostnet

import (
	"fmt"
	"net"
	"path/filepath"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// PrimaryLink names the link carrying mac in the calling thread's namespace,
// or "" when there is none.
func PrimaryLink(mac string) (string, error) {
	hw, err := net.ParseMAC(mac)
	if err != nil {
		return "", fmt.Errorf("primary ENI MAC %q: %w", mac, err)
	}
	links, err := netlink.LinkList()
	if err != nil {
		return "", fmt.Errorf("listing links: %w", err)
	}
	for _, l := range links {
		if l.Attrs().HardwareAddr.String() == hw.String() {
			return l.Attrs().Name, nil
		}
	}
	return "", nil
}

func fwmarkRule(mark uint32) *netlink.Rule { return fwmarkRuleOf(unix.AF_INET, mark) }

func fwmarkRuleOf(family int, mark uint32) *netlink.Rule {
	r := netlink.NewRule()
	r.Family = family
	r.Priority = PrioFwmark
	r.Mark = mark
	r.Mask = &mark
	r.Table = unix.RT_TABLE_MAIN
	return r
}

// fwmarkRules lists the IPv4 rules at PrioFwmark that send a mark to main:
// ours or an older one with another mark; fwmarkRulesOf those of family.
func fwmarkRules() ([]netlink.Rule, error) { return fwmarkRulesOf(unix.AF_INET) }

func fwmarkRulesOf(family int) ([]netlink.Rule, error) {
	rules, err := netlink.RuleList(family)
	if err != nil {
		return nil, fmt.Errorf("listing ip rules: %w", err)
	}
	var out []netlink.Rule
	for _, r := range rules {
		if r.Priority == PrioFwmark && r.Mark != 0 && (r.Table == unix.RT_TABLE_MAIN || r.Table == 0) {
			out = append(out, r)
		}
	}
	return out, nil
}

func hasRule(rules []netlink.Rule, mark uint32) bool {
	for _, r := range rules {
		if r.Mark == mark && r.Mask != nil && *r.Mask == mark && r.Src == nil && r.Dst == nil {
			return true
		}
	}
	return false
}

// syncFwmarkRule leaves exactly the wanted fwmark rule (none when !want) in
// family.
func syncFwmarkRule(family int, want bool, mark uint32) (changed bool, err error) {
	rules, err := fwmarkRulesOf(family)
	if err != nil {
		return false, err
	}
	for _, r := range rules {
		if want && r.Mark == mark && r.Mask != nil && *r.Mask == mark && r.Src == nil && r.Dst == nil {
			continue
		}
		if err := netlink.RuleDel(&r); err != nil {
			return changed, fmt.Errorf("deleting ip rule fwmark %#x prio %d: %w", r.Mark, r.Priority, err)
		}
		changed = true
	}
	if want && !hasRule(rules, mark) {
		if err := netlink.RuleAdd(fwmarkRuleOf(family, mark)); err != nil {
			return changed, fmt.Errorf("adding ip rule fwmark %#x/%#x lookup main prio %d: %w", mark, mark, PrioFwmark, err)
		}
		changed = true
	}
	return changed, nil
}

// Loose reverse-path filtering lets a marked reply leave by the primary ENI
// while its connection came in elsewhere. /proc/sys/net shows the calling
// thread's namespace.
const rpFilterLoose = "2"

func rpFilter(link string) (string, error) {
	return readSysctl(sysctl{path: filepath.Join("net/ipv4/conf", link, "rp_filter")})
}
