package hostnet

import (
	"fmt"

	"github.com/google/nftables"
	"golang.org/x/sys/unix"
)

// Status says which node rules are in place, for `pool status` and `doctor`.
type Status struct {
	Table    bool   `json:"table"`              // our nftables table holds exactly the wanted rules (or is absent when none are wanted)
	Fwmark   bool   `json:"fwmark"`             // the fwmark rule is present exactly when wanted
	Services bool   `json:"externalServices"`   // one rule per AWS_EXTERNAL_SERVICE_CIDRS entry, and no other
	RPFilter string `json:"rpFilter,omitempty"` // the primary link's rp_filter, when it must be loose
	Wanted   string `json:"wanted"`             // what the configuration asks for, in words
	// Drift names what is not in place of the IPv6 and egress settings
	// (Config.IPv6, V4EgressRange, V6EgressRange): the ip6 table, the IPv6
	// fwmark rule, each sysctl with its value. Empty: all in place.
	Drift []string `json:"drift,omitempty"`
}

// InPlace reports whether every wanted rule is there and nothing stale is.
func (s Status) InPlace() bool {
	return s.Table && s.Fwmark && s.Services && (s.RPFilter == "" || s.RPFilter == rpFilterLoose) && len(s.Drift) == 0
}

// Check reads the rules without changing anything.
func Check(cfg Config) (Status, error) {
	if err := cfg.Validate(); err != nil {
		return Status{}, err
	}
	st := Status{Wanted: describe(cfg)}
	c, err := nftables.New()
	if err != nil {
		return st, fmt.Errorf("opening nftables: %w", err)
	}
	if st.Table, err = tableInPlace(c, nftables.TableFamilyIPv4, desired(cfg)); err != nil {
		return st, err
	}
	rules, err := fwmarkRules()
	if err != nil {
		return st, err
	}
	st.Fwmark = hasRule(rules, cfg.Mark) == cfg.fwmark() && len(rules) <= 1
	if st.Services, err = servicesInPlace(cfg.ExternalServices); err != nil {
		return st, err
	}
	if cfg.fwmark() && cfg.PrimaryIf != "" {
		if st.RPFilter, err = rpFilter(cfg.PrimaryIf); err != nil {
			return st, err
		}
	}
	st.Drift, err = drift(c, cfg)
	return st, err
}

// Ensure checks the rules and repairs what is missing or stale; it is
// idempotent and cheap when all is in place (a few netlink reads). It
// returns what it had to (re)write. Settings under /proc/sys that this
// process may not write come back as a *ReadOnlyError after the rest is set.
func Ensure(cfg Config) (repaired []string, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c, err := nftables.New()
	if err != nil {
		return nil, fmt.Errorf("opening nftables: %w", err)
	}
	if repaired, err = ensureTable(c, nftables.TableFamilyIPv4, desired(cfg)); err != nil {
		return repaired, err
	}
	changed, err := syncFwmarkRule(unix.AF_INET, cfg.fwmark(), cfg.Mark)
	if err != nil {
		return repaired, err
	}
	if changed {
		repaired = append(repaired, fmt.Sprintf("ip rule fwmark prio %d", PrioFwmark))
	}
	services, err := syncServiceRules(cfg.ExternalServices)
	if repaired = append(repaired, services...); err != nil {
		return repaired, err
	}
	more, err := ensureIPv6(c, cfg)
	if repaired = append(repaired, more...); err != nil {
		return repaired, err
	}
	set, err := EnsureSysctls(cfg)
	return append(repaired, set...), err
}

// EnsureSysctls writes the kernel settings cfg needs (loose rp_filter on the
// primary link; with IPv6, forwarding and accept_ra) that differ, and
// nothing else: at boot, a process that may write /proc/sys sets them for
// the passes that may not (*ReadOnlyError). Returns what it set.
func EnsureSysctls(cfg Config) ([]string, error) {
	want := cfg.sysctls()
	if rp, ok := cfg.rpFilter(); ok {
		want = append([]sysctl{rp}, want...)
	}
	return ensureSysctls(want)
}

// ensureTable rebuilds our table of family unless it already is want.
func ensureTable(c *nftables.Conn, family nftables.TableFamily, want *tableSpec) ([]string, error) {
	ok, err := tableInPlace(c, family, want)
	if err != nil || ok {
		return nil, err
	}
	if err := replaceTable(c, family, want); err != nil {
		return nil, err
	}
	return []string{"nftables table " + familyName(family) + " " + TableName}, nil
}

// Remove deletes the node-level rules (both nftables tables, the fwmark
// rules, the external-service rules) and names what it removed; nothing
// when none is there. rp_filter and the sysctls stay: another component may
// rely on them, and they are safe.
func Remove() (removed []string, err error) {
	c, err := nftables.New()
	if err != nil {
		return nil, fmt.Errorf("opening nftables: %w", err)
	}
	for _, family := range []nftables.TableFamily{nftables.TableFamilyIPv4, nftables.TableFamilyIPv6} {
		exists, err := tableExists(c, family)
		if err != nil {
			return removed, err
		}
		if !exists {
			continue
		}
		if err := replaceTable(c, family, nil); err != nil {
			return removed, err
		}
		removed = append(removed, "nftables table "+familyName(family)+" "+TableName)
	}
	for _, family := range []int{unix.AF_INET, unix.AF_INET6} {
		changed, err := syncFwmarkRule(family, false, 0)
		if err != nil {
			return removed, err
		}
		if changed {
			removed = append(removed, fmt.Sprintf("ip rule fwmark lookup main prio %d (%s)", PrioFwmark, afName(family)))
		}
	}
	services, err := syncServiceRules(nil)
	return append(removed, services...), err
}

func afName(family int) string {
	if family == unix.AF_INET6 {
		return "IPv6"
	}
	return "IPv4"
}

func describe(cfg Config) string {
	s := "no SNAT (external)"
	if cfg.snat() {
		s = fmt.Sprintf("SNAT to %s (%s) except %v", cfg.PrimaryIP, cfg.Randomize, cfg.noSNAT())
	}
	if len(cfg.ExternalServices) > 0 {
		s += fmt.Sprintf("; %v through main", sortedPrefixes(cfg.ExternalServices))
	}
	switch {
	case cfg.nodePortMark():
		s += fmt.Sprintf("; NodePort connmark %#x on %s", cfg.Mark, cfg.PrimaryIf)
	case cfg.NodePort:
		s += "; NodePort connmark wanted, but no primary interface found"
	}
	return s + describe6(cfg)
}
