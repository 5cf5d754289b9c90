package reconcile

import (
	"context"
	"net/netip"
	"slices"

	"vpc-cni/hostnet"
	"vpc-cni/netns"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// NodeRules keeps the node-level rules (SNAT, NodePort connmark, fwmark rule);
// a Host that also implements it gets them checked and repaired every pass.
type NodeRules interface {
	EnsureNodeRules(cfg hostnet.Config) (repaired []string, err error)
}

// ensureNodeRules is the pass's hook: it checks the node-level rules and
// repairs what another program removed or what a changed knob makes stale.
func (r *Runner) ensureNodeRules(ctx context.Context, node store.Node, rep *Report) {
	nr, ok := r.Host.(NodeRules)
	if !ok || !node.PrimaryIP.IsValid() {
		return
	}
	cfg, err := NodeRulesConfig(node, settings.Inputs{Env: r.Env, File: r.File})
	if err == nil && cfg.PrimaryIf == "" {
		// Not this node's namespace (a test's, or a misconfigured run):
		// never write rules where the primary ENI is not. Debug only:
		// doctor and pool status report the rules' state.
		r.log().Debug("node rules not set: no link has the primary ENI's MAC", "mac", node.PrimaryMAC)
		return
	}
	if err == nil {
		cfg.VPCCIDRs = r.refreshVPCCIDRs(ctx, node).VPCCIDRs
		var repaired []string
		repaired, err = nr.EnsureNodeRules(cfg)
		if len(repaired) > 0 {
			r.log().Info("node rules set", "repaired", repaired)
		}
	}
	if err != nil {
		rep.Failed = append(rep.Failed, "node rules: "+err.Error())
	}
}

// vpcCIDRReader reads the VPC's CIDRs now; *cloud.Client implements it.
type vpcCIDRReader interface {
	VPCCIDRs(ctx context.Context, mac string) ([]netip.Prefix, error)
}

// refreshVPCCIDRs rereads the VPC's CIDRs (one IMDS read), so a CIDR
// associated after the node was learnt keeps pods' addresses, and stores a
// change so that status and doctor expect the same rules. On failure the
// learnt CIDRs stay.
func (r *Runner) refreshVPCCIDRs(ctx context.Context, node store.Node) store.Node {
	rd, ok := r.Cloud.(vpcCIDRReader)
	if !ok {
		return node
	}
	cidrs, err := rd.VPCCIDRs(ctx, node.PrimaryMAC)
	if err != nil || len(cidrs) == 0 || slices.Equal(cidrs, node.VPCCIDRs) {
		if err != nil {
			r.log().Info("VPC CIDRs not reread; using the learnt ones", "err", err)
		}
		return node
	}
	node.VPCCIDRs = cidrs
	if err := r.updateNode(func(n *store.Node) { n.VPCCIDRs = cidrs }); err != nil {
		r.log().Info("VPC CIDRs not stored", "err", err)
	}
	return node
}

// NodeRulesConfig is what the node-level rules should be for this node and
// configuration (environment, then file); the primary link is found by its MAC in the calling thread's
// namespace (PrimaryIf is "" when no link has it: the rules are not ours to
// set there).
func NodeRulesConfig(node store.Node, in settings.Inputs) (hostnet.Config, error) {
	n, err := settings.NodeNetwork(in.Merged())
	if err != nil {
		return hostnet.Config{}, err
	}
	link, err := hostnet.PrimaryLink(node.PrimaryMAC)
	if err != nil {
		return hostnet.Config{}, err
	}
	return hostnet.Config{
		PrimaryIf: link, PrimaryIP: node.PrimaryIP, VPCCIDRs: node.VPCCIDRs, ExcludeSNAT: n.ExcludeSNAT,
		ExternalSNAT: n.ExternalSNAT, Randomize: hostnet.Randomize(n.Randomize), NodePort: n.NodePort,
		Mark: n.ConnMark, VethPrefix: netns.VethPrefix,
	}, nil
}

// EnsureNodeRules implements NodeRules in the process's namespace.
func (KernelHost) EnsureNodeRules(cfg hostnet.Config) ([]string, error) { return hostnet.Ensure(cfg) }
