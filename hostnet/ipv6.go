package hostnet

import (
	"fmt"
	"path/filepath"

	"github.com/google/nftables"
	"golang.org/x/sys/unix"
)

// sysctls are the settings cfg needs, as the reference's init container sets
// them for IPv6 and the egress modes.
func (c Config) sysctls() []sysctl {
	var out []sysctl
	if c.IPv6 {
		out = append(out, sysctl{"net/ipv6/conf/all/disable_ipv6", "0"})
	}
	if c.IPv6 || c.V6EgressRange.IsValid() {
		out = append(out, sysctl{"net/ipv6/conf/all/forwarding", "1"})
		if c.PrimaryIf != "" {
			// 2: keep accepting router advertisements although forwarding,
			// so the primary link's RA-learnt default route stays.
			out = append(out, sysctl{filepath.Join("net/ipv6/conf", c.PrimaryIf, "accept_ra"), "2"})
		}
	}
	if c.V4EgressRange.IsValid() {
		out = append(out, sysctl{"net/ipv4/ip_forward", "1"})
	}
	return out
}

// drift lists what of the IPv6 and egress settings is not in place.
func drift(c *nftables.Conn, cfg Config) ([]string, error) {
	var out []string
	ok, err := tableInPlace(c, nftables.TableFamilyIPv6, desired6(cfg))
	if err != nil {
		return nil, err
	}
	if !ok {
		out = append(out, "nftables table ip6 "+TableName)
	}
	if cfg.IPv6 {
		rules, err := fwmarkRulesOf(unix.AF_INET6)
		if err != nil {
			return nil, err
		}
		if hasRule(rules, cfg.Mark) != cfg.fwmark() || len(rules) > 1 {
			out = append(out, fmt.Sprintf("ip -6 rule fwmark prio %d", PrioFwmark))
		}
	}
	for _, s := range cfg.sysctls() {
		got, err := readSysctl(s)
		if err != nil {
			return nil, err
		}
		if got != s.want {
			out = append(out, fmt.Sprintf("%s is %s, want %s", s.path, got, s.want))
		}
	}
	return out, nil
}

// ensureIPv6 repairs what drift would list; the IPv6 fwmark rule is left
// alone unless cfg.IPv6 (an IPv4 node's IPv6 rules are not ours).
func ensureIPv6(c *nftables.Conn, cfg Config) ([]string, error) {
	repaired, err := ensureTable(c, nftables.TableFamilyIPv6, desired6(cfg))
	if err != nil {
		return repaired, err
	}
	if cfg.IPv6 {
		changed, err := syncFwmarkRule(unix.AF_INET6, cfg.fwmark(), cfg.Mark)
		if err != nil {
			return repaired, fmt.Errorf("IPv6: %w", err)
		}
		if changed {
			repaired = append(repaired, fmt.Sprintf("ip -6 rule fwmark prio %d", PrioFwmark))
		}
	}
	return repaired, nil
}

func describe6(cfg Config) string {
	var s string
	if cfg.IPv6 {
		s += "; IPv6 forwarding"
	}
	if cfg.V4EgressRange.IsValid() {
		s += fmt.Sprintf("; IPv4 egress %s SNAT to %s", cfg.V4EgressRange, cfg.PrimaryIP)
	}
	if cfg.V6EgressRange.IsValid() {
		s += fmt.Sprintf("; IPv6 egress %s SNAT to %s", cfg.V6EgressRange, cfg.PrimaryIPv6)
	}
	return s
}
