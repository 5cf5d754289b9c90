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

// NodeNetwork reads the node-level knobs (environment, then file). Unlike
// the reference, which logs and falls back to the default, a bad value is an
// error naming the variable and where it was set. Resolve checks them too,
// so every command and verb refuses a bad one, not only the pass that
// applies the rules.
func NodeNetwork(in Inputs) (n NodeNet, err error) {
	flag := func(name string) bool {
		text, _, e := checked(in, name)
		if err == nil {
			err = e
		}
		b, _ := strconv.ParseBool(text)
		return b
	}
	n.ExternalSNAT, n.NodePort = flag(ExternalSNAT), flag(NodePortSupport)
	if err != nil {
		return n, err
	}
	if n.Randomize, _, err = checked(in, RandomizeSNAT); err != nil {
		return n, err
	}
	text, v, ok := in.Lookup(ConnMark)
	if !ok {
		text = knob(ConnMark).Default
	}
	m, perr := strconv.ParseUint(text, 0, 32)
	if perr != nil || m == 0 {
		return n, bad(v, text, "must be a non-zero 32-bit mark such as 0x80")
	}
	n.ConnMark = uint32(m)
	if text, v, ok := in.Lookup(ExcludeSNATCIDRs); ok {
		for _, s := range strings.Split(text, ",") {
			p, err := netip.ParsePrefix(strings.TrimSpace(s))
			if err != nil || !p.Addr().Is4() {
				return n, bad(v, text, fmt.Sprintf("%q is not an IPv4 CIDR", strings.TrimSpace(s)))
			}
			n.ExcludeSNAT = append(n.ExcludeSNAT, p)
		}
	}
	return n, nil
}
