package settings

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Node-level rules (hostnet), with the reference's names and defaults.
const (
	ExternalSNAT     = "AWS_VPC_K8S_CNI_EXTERNALSNAT"
	ExcludeSNATCIDRs = "AWS_VPC_K8S_CNI_EXCLUDE_SNAT_CIDRS"
	RandomizeSNAT    = "AWS_VPC_K8S_CNI_RANDOMIZESNAT"
	NodePortSupport  = "AWS_VPC_CNI_NODE_PORT_SUPPORT"
	ConnMark         = "AWS_VPC_K8S_CNI_CONNMARK"
)

// NodeNet is the configuration of the node-level rules.
type NodeNet struct {
	ExternalSNAT bool           `json:"externalSnat"`
	ExcludeSNAT  []netip.Prefix `json:"excludeSnatCidrs,omitempty"`
	Randomize    string         `json:"randomizeSnat"` // prng, hashrandom or none
	NodePort     bool           `json:"nodePortSupport"`
	ConnMark     uint32         `json:"connmark"`
}

// NodeNetwork reads the node-level knobs. Unlike the reference, which logs
// and falls back to the default, a bad value is an error naming the variable.
func NodeNetwork(env Lookup) (NodeNet, error) {
	n := NodeNet{Randomize: "prng", NodePort: true, ConnMark: 0x80}
	get := func(name string) (string, bool) {
		if env == nil {
			return "", false
		}
		v, ok := env(name)
		v = strings.TrimSpace(v)
		return v, ok && v != ""
	}
	var err error
	if v, ok := get(ExternalSNAT); ok {
		if n.ExternalSNAT, err = strconv.ParseBool(v); err != nil {
			return n, fmt.Errorf("%s=%q: not a boolean (true or false)", ExternalSNAT, v)
		}
	}
	if v, ok := get(NodePortSupport); ok {
		if n.NodePort, err = strconv.ParseBool(v); err != nil {
			return n, fmt.Errorf("%s=%q: not a boolean (true or false)", NodePortSupport, v)
		}
	}
	if v, ok := get(RandomizeSNAT); ok {
		if v != "prng" && v != "hashrandom" && v != "none" {
			return n, fmt.Errorf("%s=%q: must be prng, hashrandom or none", RandomizeSNAT, v)
		}
		n.Randomize = v
	}
	if v, ok := get(ConnMark); ok {
		m, err := strconv.ParseUint(v, 0, 32)
		if err != nil || m == 0 {
			return n, fmt.Errorf("%s=%q: must be a non-zero 32-bit mark such as 0x80", ConnMark, v)
		}
		n.ConnMark = uint32(m)
	}
	if v, ok := get(ExcludeSNATCIDRs); ok {
		for _, s := range strings.Split(v, ",") {
			p, err := netip.ParsePrefix(strings.TrimSpace(s))
			if err != nil || !p.Addr().Is4() {
				return n, fmt.Errorf("%s: %q is not an IPv4 CIDR", ExcludeSNATCIDRs, s)
			}
			n.ExcludeSNAT = append(n.ExcludeSNAT, p)
		}
	}
	return n, nil
}
