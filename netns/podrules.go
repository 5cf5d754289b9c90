package netns

import (
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink"
)

// SetPodRules installs, in the node netns, the policy rules of a pod address
// that another plugin wires (vpc-cni as an IPAM delegate): `to ip lookup
// main` (512), so traffic to the pod stays local, and for an address of a
// secondary ENI `from ip lookup table` (1536), so its replies leave through
// the ENI that owns it (EC2 drops them elsewhere). table 0 or 254 is main.
// ip may be IPv4 or IPv6 (the rules are then in IPv6).
func SetPodRules(ip netip.Addr, table int) error {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.Zone() != "" {
		return fmt.Errorf("pod rules: %v is not a plain IP address", ip)
	}
	return withHost(func(h *netlink.Handle) error {
		rules, err := listRulesOf(h, familyOf(ip))
		if err != nil {
			return err
		}
		if err := ensureRule(h, rules, toPodRule(ip)); err != nil {
			return err
		}
		if isMain(table) {
			return deleteRules(h, rules, fromPodRule(ip, 0))
		}
		return ensureRule(h, rules, fromPodRule(ip, table))
	})
}

// ClearPodRules removes both rules of ip; missing rules are fine.
func ClearPodRules(ip netip.Addr) error {
	ip = ip.Unmap()
	if !ip.IsValid() {
		return nil
	}
	return withHost(func(h *netlink.Handle) error { return deletePodRules(h, ip) })
}

// deletePodRules removes ip's to-rule (512) and from-rules (1536, any table),
// in ip's family.
func deletePodRules(h *netlink.Handle, ip netip.Addr) error {
	rules, err := listRulesOf(h, familyOf(ip))
	if err != nil {
		return err
	}
	if err := deleteRules(h, rules, toPodRule(ip)); err != nil {
		return err
	}
	return deleteRules(h, rules, fromPodRule(ip, 0))
}
