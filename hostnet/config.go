// Package hostnet owns the node-level rules that pods on secondary ENIs need
// (the reference's SetupHostNetwork): egress SNAT of pod traffic to non-VPC
// destinations, the NodePort connmark rules, the fwmark policy rule and
// loose rp_filter on the primary interface; with IPv6 (Config.IPv6) the
// node's IPv6 forwarding, accept_ra=2 and the fwmark rule in IPv6; for the
// egress interfaces (Config.V4EgressRange, V6EgressRange) their SNAT and the
// rejection of new connections into them, in tables ip and ip6 vpc-cni.
// Reconcile calls Ensure on every pass; the plugin never does, so the
// plugin's start-up never pays for it.
//
// Every function works in the calling thread's network namespace.
package hostnet

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"slices"
)

// Randomize is the SNAT port randomisation (AWS_VPC_K8S_CNI_RANDOMIZESNAT).
type Randomize string

const (
	RandomPRNG Randomize = "prng"       // --random-fully
	RandomHash Randomize = "hashrandom" // --random
	RandomNone Randomize = "none"
)

// DefaultConnMark is the reference's AWS_VPC_K8S_CNI_CONNMARK.
const DefaultConnMark = 0x80

// Rule priority of `fwmark <mark>/<mark> lookup main`: after the to-pod rules
// (512), before the from-pod rules (1536), as the reference.
const PrioFwmark = 1024

// Config is what the rules depend on.
type Config struct {
	PrimaryIf    string         // the primary ENI's link; "" when the node has none (no NodePort marking then)
	PrimaryIP    netip.Addr     // SNAT target
	VPCCIDRs     []netip.Prefix // never SNATed, never marked
	ExcludeSNAT  []netip.Prefix // AWS_VPC_K8S_CNI_EXCLUDE_SNAT_CIDRS
	ExternalSNAT bool           // AWS_VPC_K8S_CNI_EXTERNALSNAT: no SNAT, no egress marking
	Randomize    Randomize
	NodePort     bool   // AWS_VPC_CNI_NODE_PORT_SUPPORT
	Mark         uint32 // AWS_VPC_K8S_CNI_CONNMARK
	VethPrefix   string // host veths of pods ("eni")
	// ExternalServices: AWS_EXTERNAL_SERVICE_CIDRS, each reached through
	// main (rule at PrioExternalService).
	ExternalServices []netip.Prefix

	// IPv6 (ENABLE_IPv6: IPv6 or dual-stack pods): IPv6 on and forwarding
	// (net.ipv6.conf.all.disable_ipv6=0, .forwarding=1), accept_ra=2 on
	// PrimaryIf so its RA-learnt default route survives forwarding, and the
	// fwmark rule in IPv6 as well (when the IPv4 one is wanted).
	IPv6 bool
	// V4EgressRange (ENABLE_V4_EGRESS, IPv6 pods' v4if0: netns.EgressV4Range;
	// zero: off): traffic from it SNATed to PrimaryIP, new connections into
	// it from anywhere rejected, net.ipv4.ip_forward=1.
	V4EgressRange netip.Prefix
	// V6EgressRange (ENABLE_V6_EGRESS, IPv4 pods' v6if0: netns.EgressV6Range;
	// zero: off): likewise in table ip6 vpc-cni, SNATed to PrimaryIPv6, and
	// IPv6 forwarding as for IPv6.
	V6EgressRange netip.Prefix
	PrimaryIPv6   netip.Addr // the node's IPv6 (IMDS ipv6), the V6Egress SNAT target

	// KeepSource: pod addresses whose traffic is neither marked for the
	// primary ENI nor SNATed, whatever its destination (the blocks of the
	// ENIs of network profiles with SNAT none): it leaves through its own
	// ENI (the pod's from-rule) with the pod's address.
	KeepSource []netip.Prefix
}

// snat reports whether pod egress is SNATed (and marked out of the primary ENI).
func (c Config) snat() bool { return !c.ExternalSNAT }

// fwmark reports whether marked traffic needs the fwmark rule (and loose
// rp_filter): the reference's condition.
func (c Config) fwmark() bool { return c.NodePort || c.snat() }

// nodePortMark reports whether connections arriving on the primary ENI are marked.
func (c Config) nodePortMark() bool { return c.NodePort && c.PrimaryIf != "" }

// noSNAT are the destinations that keep the pod's address: the VPC's CIDRs and
// the excluded ones, deduplicated and sorted so the fingerprint is stable.
func (c Config) noSNAT() []netip.Prefix {
	out := make([]netip.Prefix, 0, len(c.VPCCIDRs)+len(c.ExcludeSNAT))
	for _, p := range append(slices.Clone(c.VPCCIDRs), c.ExcludeSNAT...) {
		out = append(out, p.Masked())
	}
	slices.SortFunc(out, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return a.Bits() - b.Bits()
	})
	return slices.Compact(out)
}

// Validate rejects a configuration the rules cannot express.
func (c Config) Validate() error {
	if c.snat() && !c.PrimaryIP.Is4() {
		return fmt.Errorf("node rules: SNAT needs the primary IPv4 address, have %q", c.PrimaryIP)
	}
	if c.fwmark() && c.Mark == 0 {
		return fmt.Errorf("node rules: the connmark must not be 0")
	}
	switch c.Randomize {
	case RandomPRNG, RandomHash, RandomNone:
	default:
		return fmt.Errorf("node rules: unknown SNAT randomisation %q (prng, hashrandom or none)", c.Randomize)
	}
	for _, p := range append(append(c.noSNAT(), c.ExternalServices...), c.KeepSource...) {
		if !p.Addr().Is4() {
			return fmt.Errorf("node rules: %s is not an IPv4 CIDR", p)
		}
	}
	if c.VethPrefix == "" {
		return fmt.Errorf("node rules: empty veth prefix")
	}
	return c.validateEgress()
}

func (c Config) validateEgress() error {
	if r := c.V4EgressRange; r.IsValid() && (!r.Addr().Is4() || !c.PrimaryIP.Is4()) {
		return fmt.Errorf("node rules: IPv4 egress needs an IPv4 range (have %s) and the primary IPv4 (have %q)", r, c.PrimaryIP)
	}
	if r := c.V6EgressRange; r.IsValid() && (!r.Addr().Is6() || !c.PrimaryIPv6.Is6() || c.PrimaryIPv6.Is4In6() ||
		!c.PrimaryIPv6.IsGlobalUnicast()) {
		return fmt.Errorf("node rules: IPv6 egress needs an IPv6 range (have %s) and the node's global IPv6 (have %q)", r, c.PrimaryIPv6)
	}
	return nil
}

// layoutVersion changes whenever desired() builds a different table for the
// same configuration, so an upgraded binary rebuilds the old layout.
const layoutVersion = 2

// fingerprint names the configuration the table was built from; it is stored
// in every rule's comment, so a pass can tell "in place" from "stale" without
// comparing expressions the kernel may render differently.
func (c Config) fingerprint() string {
	s := fmt.Sprintf("%d|%s|%s|%v|%v|%s|%v|%#x|%s", layoutVersion, c.PrimaryIf, c.PrimaryIP, c.noSNAT(), c.ExternalSNAT,
		c.Randomize, c.NodePort, c.Mark, c.VethPrefix)
	if c.V4EgressRange.IsValid() {
		// Only then: the tables of configurations without it keep their fingerprint.
		s += "|v4egress " + c.V4EgressRange.String()
	}
	if len(c.KeepSource) > 0 {
		s += fmt.Sprintf("|keep %v", c.KeepSource)
	}
	return digest(s)
}

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:6])
}

// fingerprint6 names the configuration of the ip6 table.
func (c Config) fingerprint6() string {
	return digest(fmt.Sprintf("%d|v6egress %s|%s|%s", layoutVersion, c.V6EgressRange, c.PrimaryIPv6, c.Randomize))
}
