package hostnet

import (
	"fmt"

	"github.com/google/nftables"
)

// Status says which node rules are in place, for `pool status` and `doctor`.
type Status struct {
	Table    bool   `json:"table"`              // our nftables table holds exactly the wanted rules (or is absent when none are wanted)
	Fwmark   bool   `json:"fwmark"`             // the fwmark rule is present exactly when wanted
	Services bool   `json:"externalServices"`   // one rule per AWS_EXTERNAL_SERVICE_CIDRS entry, and no other
	RPFilter string `json:"rpFilter,omitempty"` // the primary link's rp_filter, when it must be loose
	Wanted   string `json:"wanted"`             // what the configuration asks for, in words
}

// InPlace reports whether every wanted rule is there and nothing stale is.
func (s Status) InPlace() bool {
	return s.Table && s.Fwmark && s.Services && (s.RPFilter == "" || s.RPFilter == rpFilterLoose)
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
	if st.Table, err = tableInPlace(c, desired(cfg)); err != nil {
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
			return st, fmt.Errorf("reading rp_filter of %s: %w", cfg.PrimaryIf, err)
		}
	}
	return st, nil
}

// Ensure checks the rules and repairs what is missing or stale; it is
// idempotent and cheap when all is in place (a few netlink reads). It
// returns what it had to (re)write.
func Ensure(cfg Config) (repaired []string, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c, err := nftables.New()
	if err != nil {
		return nil, fmt.Errorf("opening nftables: %w", err)
	}
	want := desired(cfg)
	ok, err := tableInPlace(c, want)
	if err != nil {
		return nil, err
	}
	if !ok {
		if err := replaceTable(c, want); err != nil {
			return nil, err
		}
		repaired = append(repaired, "nftables table "+TableName)
	}
	changed, err := syncFwmarkRule(cfg.fwmark(), cfg.Mark)
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
	if cfg.fwmark() && cfg.PrimaryIf != "" {
		if changed, err = ensureRPFilter(cfg.PrimaryIf); err != nil {
			return repaired, err
		}
		if changed {
			repaired = append(repaired, "rp_filter of "+cfg.PrimaryIf)
		}
	}
	return repaired, nil
}

// Remove deletes our table and fwmark rule. rp_filter stays loose: another
// component may rely on it, and loose is safe.
func Remove() error {
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("opening nftables: %w", err)
	}
	if err := replaceTable(c, nil); err != nil {
		return err
	}
	if _, err = syncFwmarkRule(false, 0); err != nil {
		return err
	}
	_, err = syncServiceRules(nil)
	return err
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
	return s
}
