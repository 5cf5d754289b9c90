package netns

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// ruleSpec is one of our policy rules: a host (/32 or /128) selector (destination when to is
// set, else source), a priority and a table.
type ruleSpec struct {
	prio  int
	to    bool
	ip    netip.Addr
	table int
}

func toPodRule(ip netip.Addr) ruleSpec { return ruleSpec{PrioToPod, true, ip, MainTable} }

func fromPodRule(ip netip.Addr, table int) ruleSpec {
	return ruleSpec{PrioFromPod, false, ip, table}
}

func (s ruleSpec) String() string {
	dir := "from"
	if s.to {
		dir = "to"
	}
	table := fmt.Sprint(s.table)
	if s.table == MainTable {
		table = "main"
	}
	return fmt.Sprintf("rule %s %s lookup %s prio %d", dir, s.ip, table, s.prio)
}

func (s ruleSpec) netlinkRule() *netlink.Rule {
	r := netlink.NewRule()
	r.Family = familyOf(s.ip)
	r.Priority = s.prio
	r.Table = s.table
	if s.to {
		r.Dst = hostNet(s.ip)
	} else {
		r.Src = hostNet(s.ip)
	}
	return r
}

// selects reports whether r has this spec's priority and selector, whatever
// its table.
func (s ruleSpec) selects(r netlink.Rule) bool {
	if r.Priority != s.prio {
		return false
	}
	if s.to {
		return r.Src == nil && isHost(r.Dst, s.ip)
	}
	return r.Dst == nil && isHost(r.Src, s.ip)
}

// listRules lists the IPv4 rules; listRulesOf those of family.
func listRules(h *netlink.Handle) ([]netlink.Rule, error) { return listRulesOf(h, unix.AF_INET) }

func listRulesOf(h *netlink.Handle, family int) ([]netlink.Rule, error) {
	rules, err := dump(func() ([]netlink.Rule, error) { return h.RuleList(family) })
	if err != nil {
		return nil, fmt.Errorf("list rules: %w", err)
	}
	return rules, nil
}

// ensureRule makes s the only rule with its priority and selector: rules
// (from the listing given) that point at another table are replaced, and an
// exact duplicate is not added.
func ensureRule(h *netlink.Handle, rules []netlink.Rule, s ruleSpec) error {
	present := false
	for _, r := range rules {
		switch {
		case !s.selects(r):
		case r.Table == s.table && !present:
			present = true
		default:
			if err := h.RuleDel(&r); err != nil && !isGone(err) {
				return fmt.Errorf("delete stale %s: %w", describeRule(r), err)
			}
		}
	}
	if present {
		return nil
	}
	if err := h.RuleAdd(s.netlinkRule()); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("add %s: %w", s, err)
	}
	return nil
}

// deleteRules removes every rule with s's priority and selector, whatever the
// table.
func deleteRules(h *netlink.Handle, rules []netlink.Rule, s ruleSpec) error {
	for _, r := range rules {
		if !s.selects(r) {
			continue
		}
		if err := h.RuleDel(&r); err != nil && !isGone(err) {
			return fmt.Errorf("delete %s: %w", describeRule(r), err)
		}
	}
	return nil
}

// findRule reports whether exactly s is present.
func findRule(rules []netlink.Rule, s ruleSpec) bool {
	for _, r := range rules {
		if s.selects(r) && r.Table == s.table {
			return true
		}
	}
	return false
}

func describeRule(r netlink.Rule) string {
	return fmt.Sprintf("rule prio %d from %v to %v lookup %d", r.Priority, r.Src, r.Dst, r.Table)
}
