// Package hostnet owns the node-level rules that pods on secondary ENIs need
// (the reference's SetupHostNetwork): egress SNAT of pod traffic to non-VPC
// destinations, the NodePort connmark rules, the fwmark policy rule and
// loose rp_filter on the primary interface. Reconcile calls Ensure on every
// pass; the plugin never does, so the plugin's start-up never pays for it.
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
	for _, p := range append(c.noSNAT(), c.ExternalServices...) {
		if !p.Addr().Is4() {
			return fmt.Errorf("node rules: %s is not an IPv4 CIDR", p)
		}
	}
	if c.VethPrefix == "" {
		return fmt.Errorf("node rules: empty veth prefix")
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
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:6])
}
