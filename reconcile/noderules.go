package reconcile

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"vpc-cni/hostnet"
	"vpc-cni/pool"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// ensureNodeRules is the pass's hook: it checks the node-level rules and
// repairs what another program removed or what a changed knob makes stale.
// A failure fails the pass (exit 1): pods' traffic depends on these rules.
// Sysctls this process may not write (a container's read-only /proc/sys)
// are a finding, not a failure: the rest is in place, and whoever set up
// the node (install, as root) sets them.
func (p *pass) ensureNodeRules(ctx context.Context) error {
	if p.Host == nil || !p.node.PrimaryIP.IsValid() {
		return nil
	}
	rules, err := nodeRulesOn(p.node, p.inputs(), p.Host.PrimaryLink)
	if err == nil && rules.PrimaryIf == "" {
		// Not this node's namespace (a test's, or a misconfigured run):
		// never write rules where the primary ENI is not. Debug only:
		// doctor and pool status report the rules' state.
		p.log().Debug("node rules not set: no link has the primary ENI's MAC", "mac", p.node.PrimaryMAC)
		return nil
	}
	if err == nil {
		rules.VPCCIDRs = p.refreshVPCCIDRs(ctx)
		err = p.v6EgressTarget(ctx, &rules)
	}
	if err == nil && len(p.cfg.Profiles) > 0 {
		var snap pool.Snapshot
		err = p.Store.View(func(tx *store.Tx) (err error) { snap, err = tx.Snapshot(); return err })
		rules.KeepSource = KeepSource(p.cfg, snap)
	}
	if err == nil {
		var repaired []string
		repaired, err = p.Host.EnsureNodeRules(rules)
		if len(repaired) > 0 {
			p.log().Info("node rules set", "repaired", repaired)
		}
	}
	if ro := (*hostnet.ReadOnlyError)(nil); errors.As(err, &ro) {
		p.log().Warn("node sysctls not set", "err", ro)
		p.rep.Findings = append(p.rep.Findings, Finding{"sysctl-read-only", ro.Error()})
		return nil
	}
	if err != nil {
		p.rep.Failed = append(p.rep.Failed, "node rules: "+err.Error())
		return fmt.Errorf("node rules: %w", err)
	}
	return nil
}

// refreshVPCCIDRs rereads the VPC's CIDRs (one IMDS read), so a CIDR
// associated after the node was learnt keeps pods' addresses, and stores a
// change so that status and doctor expect the same rules. On failure the
// learnt CIDRs stay.
func (p *pass) refreshVPCCIDRs(ctx context.Context) []netip.Prefix {
	cidrs, err := p.Cloud.VPCCIDRs(ctx, p.node.PrimaryMAC)
	if err != nil || len(cidrs) == 0 || slices.Equal(cidrs, p.node.VPCCIDRs) {
		if err != nil {
			p.log().Info("VPC CIDRs not reread; using the learnt ones", "err", err)
		}
		return p.node.VPCCIDRs
	}
	p.node.VPCCIDRs = cidrs
	if err := p.updateNode(func(n *store.Node) { n.VPCCIDRs = cidrs }); err != nil {
		p.log().Info("VPC CIDRs not stored", "err", err)
	}
	return p.node.VPCCIDRs
}

// NodeRulesConfig is what the node-level rules should be for this node, its
// pool and configuration (environment, then file); the primary link is found by its MAC in the calling thread's
// namespace (PrimaryIf is "" when no link has it: the rules are not ours to
// set there).
func NodeRulesConfig(node store.Node, snap pool.Snapshot, in settings.Inputs) (hostnet.Config, error) {
	cfg, err := nodeRulesOn(node, in, hostnet.PrimaryLink)
	if err != nil {
		return cfg, err
	}
	eff, err := settings.Resolve(settings.Overrides{}, in)
	cfg.KeepSource = KeepSource(eff, snap)
	return cfg, err
}

// nodeRulesOn is NodeRulesConfig with the primary link found by primaryLink
// (a Host's: a test's host has none, and costs no netlink read).
func nodeRulesOn(node store.Node, in settings.Inputs, primaryLink func(mac string) (string, error)) (hostnet.Config, error) {
	n, err := settings.NodeNetwork(in)
	if err != nil {
		return hostnet.Config{}, err
	}
	// The carried aws-node knobs and the pods' families these rules follow;
	// overrides hold none.
	eff, err := settings.Resolve(settings.Overrides{}, in)
	if err != nil {
		return hostnet.Config{}, err
	}
	link, err := primaryLink(node.PrimaryMAC)
	if err != nil {
		return hostnet.Config{}, err
	}
	cfg := hostnet.Config{
		PrimaryIf: link, PrimaryIP: node.PrimaryIP, VPCCIDRs: node.VPCCIDRs, ExcludeSNAT: n.ExcludeSNAT,
		ExternalSNAT: n.ExternalSNAT, Randomize: hostnet.Randomize(n.Randomize), NodePort: n.NodePort,
		Mark: n.ConnMark, VethPrefix: eff.VethPrefix, ExternalServices: eff.ExternalServiceCIDRs,
	}
	familyRules(&cfg, eff.Pool, node)
	return cfg, nil
}

// familyRules fills the IPv6 part of the node rules from the mode: IPv6
// forwarding and the fwmark rule in IPv6 for IPv6 and dual-stack pods,
// v4if0's egress range (pool.Config.EgressRange) SNATed to the primary
// IPv4, and v6if0's SNATed to the node's IPv6 as the store last learnt it
// (a pass rereads it first: v6EgressTarget).
func familyRules(cfg *hostnet.Config, c pool.Config, node store.Node) {
	cfg.IPv6 = c.PodIPv6()
	r, ok := c.EgressRange()
	switch {
	case ok && r.Addr().Is4():
		cfg.V4EgressRange = r
	case ok:
		cfg.V6EgressRange, cfg.PrimaryIPv6 = r, node.PrimaryIPv6
	}
}

// v6EgressTarget rereads the primary ENI's IPv6 (one IMDS read, only with
// ENABLE_V6_EGRESS) into rules and the store, so status and doctor expect
// the same SNAT. No IPv6 there fails the step: v6if0 could not leave.
func (p *pass) v6EgressTarget(ctx context.Context, rules *hostnet.Config) error {
	if !rules.V6EgressRange.IsValid() {
		return nil
	}
	a, err := p.Cloud.PrimaryIPv6(ctx, p.node.PrimaryMAC)
	if err != nil {
		return fmt.Errorf("ENABLE_V6_EGRESS: reading the primary ENI's IPv6 from IMDS: %w", err)
	}
	if !a.IsValid() {
		return fmt.Errorf("ENABLE_V6_EGRESS needs an IPv6 address on the primary ENI %s (IMDS lists none for %s): "+
			"assign one (aws ec2 assign-ipv6-addresses --network-interface-id %s --ipv6-address-count 1) "+
			"in a subnet with an IPv6 CIDR, or set ENABLE_V6_EGRESS=false", p.node.PrimaryENI, p.node.PrimaryMAC, p.node.PrimaryENI)
	}
	rules.PrimaryIPv6 = a
	if a != p.node.PrimaryIPv6 {
		p.node.PrimaryIPv6 = a
		if err := p.updateNode(func(n *store.Node) { n.PrimaryIPv6 = a }); err != nil {
			p.log().Info("the node's IPv6 not stored", "err", err)
		}
	}
	return nil
}

// PrimaryLink finds the primary ENI's link in the process's namespace.
func (KernelHost) PrimaryLink(mac string) (string, error) { return hostnet.PrimaryLink(mac) }

// EnsureNodeRules keeps the node-level rules in the process's namespace.
func (KernelHost) EnsureNodeRules(cfg hostnet.Config) ([]string, error) { return hostnet.Ensure(cfg) }
