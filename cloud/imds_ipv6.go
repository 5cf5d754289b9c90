package cloud

import (
	"context"
	"net/netip"
)

// NodeIPv6 is what IMDS says about the node's IPv6. Every field is empty
// where IMDS answers 404: an instance without an IPv6 address, an IPv4-only
// subnet or VPC.
type NodeIPv6 struct {
	PrimaryIPv6    netip.Addr     // "ipv6": the instance's (primary ENI's first) IPv6 address
	SubnetIPv6CIDR netip.Prefix   // <mac>/subnet-ipv6-cidr-blocks: the subnet's /64
	VPCIPv6CIDRs   []netip.Prefix // <mac>/vpc-ipv6-cidr-blocks
}

// NodeIPv6 reads the node's IPv6 address and its subnet's and VPC's IPv6
// CIDRs, for the ENI with this MAC (normally Identity().PrimaryMAC): three
// IMDS reads.
func (c *Client) NodeIPv6(ctx context.Context, mac string) (NodeIPv6, error) {
	r, err := c.reader(ctx)
	if err != nil {
		return NodeIPv6{}, err
	}
	base := "network/interfaces/macs/" + mac + "/"
	var n NodeIPv6
	if l := optionalLines(r, "ipv6"); len(l) > 0 {
		n.PrimaryIPv6, err = netip.ParseAddr(l[0])
		r.parsed("ipv6", err)
	}
	n.SubnetIPv6CIDR = optionalPrefix(r, base+"subnet-ipv6-cidr-blocks")
	n.VPCIPv6CIDRs = optionalPrefixes(r, base+"vpc-ipv6-cidr-blocks")
	if r.err != nil {
		return NodeIPv6{}, r.err
	}
	return n, nil
}

// PrimaryIPv6 is the first IPv6 address IMDS lists for the ENI with this
// MAC (<mac>/ipv6s: one read), the node's IPv6 for ENABLE_V6_EGRESS's SNAT.
// The zero Addr, no error, when the ENI has none (IMDS answers 404).
func (c *Client) PrimaryIPv6(ctx context.Context, mac string) (netip.Addr, error) {
	r, err := c.reader(ctx)
	if err != nil {
		return netip.Addr{}, err
	}
	path := "network/interfaces/macs/" + mac + "/ipv6s"
	l := optionalLines(r, path)
	if r.err != nil || len(l) == 0 {
		return netip.Addr{}, r.err
	}
	a, err := netip.ParseAddr(l[0])
	r.parsed(path, err)
	if r.err != nil {
		return netip.Addr{}, r.err
	}
	return a, nil
}

// AttachedInterfacesIPv6 is AttachedInterfaces with each ENI's IPv6 fields
// read too (three more IMDS reads per ENI, so IPv4-only nodes do not pay them).
func (c *Client) AttachedInterfacesIPv6(ctx context.Context) ([]IMDSInterface, error) {
	return c.attachedInterfaces(ctx, true)
}

func readInterfaceIPv6(r *imdsReader, base string, iface *IMDSInterface) {
	for _, s := range optionalLines(r, base+"ipv6s") {
		a, err := netip.ParseAddr(s)
		r.parsed(base+"ipv6s", err)
		iface.IPv6s = append(iface.IPv6s, a)
	}
	iface.IPv6Prefixes = optionalPrefixes(r, base+"ipv6-prefix")
	iface.SubnetIPv6CIDR = optionalPrefix(r, base+"subnet-ipv6-cidr-blocks")
}

// optionalPrefixes reads a CIDR list that IMDS answers with 404 when empty.
func optionalPrefixes(r *imdsReader, path string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range optionalLines(r, path) {
		p, err := netip.ParsePrefix(s)
		r.parsed(path, err)
		out = append(out, p)
	}
	return out
}

// optionalPrefix reads a one-CIDR path (subnet-ipv6-cidr-blocks: EC2 gives a
// subnet at most one /64); the first line counts, 404 is the zero prefix.
func optionalPrefix(r *imdsReader, path string) netip.Prefix {
	if ps := optionalPrefixes(r, path); len(ps) > 0 {
		return ps[0]
	}
	return netip.Prefix{}
}
