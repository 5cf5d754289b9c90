package cloud

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// IPv6 through EC2: /128 addresses and /80 prefixes on an ENI, from its
// subnet's /64. EC2 counts each address and each /80 against the instance
// type's Ipv6AddressesPerInterface (the same number as for IPv4).

// ErrSubnetNoIPv6 is wrapped by the error of an IPv6 call refused because the
// ENI's subnet has no IPv6 CIDR (errors.Is). Such an error is KindOther: no
// retry helps until the subnet gets a /64.
var ErrSubnetNoIPv6 = errors.New("the subnet has no IPv6 CIDR")

// IPv6Request is what AssignIPv6 asks EC2 for on one ENI: a count or explicit
// values of each kind, not both (EC2 refuses that).
type IPv6Request struct {
	AddressCount int            // Ipv6AddressCount: /128s EC2 picks
	Addresses    []netip.Addr   // Ipv6Addresses.N: these /128s
	PrefixCount  int            // Ipv6PrefixCount: /80s EC2 picks
	Prefixes     []netip.Prefix // Ipv6Prefix.N: these /80s (to put back one that was removed)
}

// IPv6Assigned is what EC2 assigned, each list ascending.
type IPv6Assigned struct {
	Addresses []netip.Addr
	Prefixes  []netip.Prefix
}

// AssignIPv6 assigns IPv6 addresses and/or /80 prefixes to the ENI in one
// AssignIpv6Addresses call. Errors: KindLimit when the ENI's IPv6 slots are
// used up; ErrSubnetNoIPv6 (KindOther) when its subnet has no IPv6 CIDR;
// KindNoFreePrefix when the /64 has no free /80.
func (c *Client) AssignIPv6(ctx context.Context, eniID string, req IPv6Request) (IPv6Assigned, error) {
	const action = "AssignIpv6Addresses"
	if req.AddressCount < 0 || req.PrefixCount < 0 {
		return IPv6Assigned{}, fmt.Errorf("cloud: %s: negative count in %+v", action, req)
	}
	in := &ec2.AssignIpv6AddressesInput{NetworkInterfaceId: aws.String(eniID),
		Ipv6Addresses: addrStrings(req.Addresses), Ipv6Prefixes: prefixStrings(req.Prefixes)}
	if req.AddressCount > 0 {
		in.Ipv6AddressCount = aws.Int32(int32(req.AddressCount))
	}
	if req.PrefixCount > 0 {
		in.Ipv6PrefixCount = aws.Int32(int32(req.PrefixCount))
	}
	out, err := call(ctx, c, action, func(h ec2Handle) (*ec2.AssignIpv6AddressesOutput, error) {
		return h.client().AssignIpv6Addresses(ctx, in)
	})
	if err != nil {
		return IPv6Assigned{}, ipv6Error(eniID, err)
	}
	var got IPv6Assigned
	if got.Addresses, err = parseIPv6Addrs(out.AssignedIpv6Addresses); err == nil {
		got.Prefixes, err = parseIPv6Prefixes(out.AssignedIpv6Prefixes)
	}
	if err != nil {
		return IPv6Assigned{}, ec2Error(action, "", fmt.Errorf("bad value in the answer: %w", err))
	}
	return got, nil
}

// AssignIPv6Prefix asks EC2 for one /80 on the ENI (the reference's
// Ipv6PrefixCount=1) and returns it.
func (c *Client) AssignIPv6Prefix(ctx context.Context, eniID string) (netip.Prefix, error) {
	got, err := c.AssignIPv6(ctx, eniID, IPv6Request{PrefixCount: 1})
	if err != nil {
		return netip.Prefix{}, err
	}
	if len(got.Prefixes) != 1 {
		return netip.Prefix{}, ec2Error("AssignIpv6Addresses", "", errEmpty(
			fmt.Sprintf("asked for one /80, EC2 answered with %v", got.Prefixes)))
	}
	return got.Prefixes[0], nil
}

// UnassignIPv6 returns IPv6 addresses and /80 prefixes of the ENI in one
// UnassignIpv6Addresses call; nothing to return is no call. One that is not
// (or no longer) on the ENI makes EC2 refuse the whole call
// (InvalidParameterValue, KindOther): re-read the ENI and ask again.
func (c *Client) UnassignIPv6(ctx context.Context, eniID string, addrs []netip.Addr, prefixes []netip.Prefix) error {
	if len(addrs)+len(prefixes) == 0 {
		return nil
	}
	for _, a := range addrs {
		if !a.Is6() || a.Is4In6() {
			return fmt.Errorf("cloud: unassign %s: not an IPv6 address", a)
		}
	}
	for _, p := range prefixes {
		if !p.Addr().Is6() || p.Addr().Is4In6() {
			return fmt.Errorf("cloud: unassign %s: not an IPv6 prefix", p)
		}
	}
	in := &ec2.UnassignIpv6AddressesInput{NetworkInterfaceId: aws.String(eniID),
		Ipv6Addresses: addrStrings(addrs), Ipv6Prefixes: prefixStrings(prefixes)}
	_, err := call(ctx, c, "UnassignIpv6Addresses", func(h ec2Handle) (*ec2.UnassignIpv6AddressesOutput, error) {
		return h.client().UnassignIpv6Addresses(ctx, in)
	})
	return ipv6Error(eniID, err)
}

// ipv6Error says what an IPv6 refusal means where the IPv4 wording would
// mislead: no IPv6 CIDR on the subnet; no free /80 (not /28).
func ipv6Error(eniID string, err error) error {
	var ce *Error
	if err == nil || !errors.As(err, &ce) {
		return err
	}
	out := *ce
	switch {
	case ce.Code == "InvalidParameterValue" && noIPv6CIDR(apiDetail(ce.Err)):
		out.Msg = fmt.Sprintf("the subnet of %s has no IPv6 CIDR (%s); associate an IPv6 /64 with the subnet "+
			"(aws ec2 associate-subnet-cidr-block) or run this node IPv4 only", eniID, apiDetail(ce.Err))
		out.Err = fmt.Errorf("%w: %w", ErrSubnetNoIPv6, ce.Err)
	case ce.Kind == KindNoFreePrefix:
		out.Msg = fmt.Sprintf("no free aligned /80 in the subnet's IPv6 /64 (%s); free prefixes in the subnet "+
			"or use another subnet", apiDetail(ce.Err))
	default:
		return err
	}
	return &out
}

func noIPv6CIDR(msg string) bool {
	msg = strings.ToLower(msg)
	return strings.Contains(msg, "ipv6 cidr") && (strings.Contains(msg, "no ") || strings.Contains(msg, "not have"))
}

func addrStrings(addrs []netip.Addr) []string {
	var out []string
	for _, a := range addrs {
		out = append(out, a.String())
	}
	return out
}

func prefixStrings(prefixes []netip.Prefix) []string {
	var out []string
	for _, p := range prefixes {
		out = append(out, p.Masked().String())
	}
	return out
}

func parseIPv6Addrs(raw []string) ([]netip.Addr, error) {
	var out []netip.Addr
	for _, s := range raw {
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is6() {
			return nil, fmt.Errorf("IPv6 address %q", s)
		}
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b netip.Addr) int { return a.Compare(b) })
	return out, nil
}

func parseIPv6Prefixes(raw []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range raw {
		p, err := netip.ParsePrefix(s)
		if err != nil || !p.Addr().Is6() {
			return nil, fmt.Errorf("IPv6 prefix %q", s)
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr()) })
	return out, nil
}

// eniIPv6 reads the ENI's ipv6AddressesSet and ipv6PrefixSet, ascending;
// unparseable entries are skipped, as for IPv4.
func eniIPv6(ni types.NetworkInterface) (addrs []netip.Addr, prefixes []netip.Prefix) {
	for _, a := range ni.Ipv6Addresses {
		if ip, err := netip.ParseAddr(aws.ToString(a.Ipv6Address)); err == nil && ip.Is6() {
			addrs = append(addrs, ip)
		}
	}
	for _, p := range ni.Ipv6Prefixes {
		if pfx, err := netip.ParsePrefix(aws.ToString(p.Ipv6Prefix)); err == nil && pfx.Addr().Is6() {
			prefixes = append(prefixes, pfx)
		}
	}
	slices.SortFunc(addrs, func(a, b netip.Addr) int { return a.Compare(b) })
	slices.SortFunc(prefixes, func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr()) })
	return addrs, prefixes
}

// subnetIPv6 reads the subnet's associated IPv6 CIDRs (EC2 allows one /64).
func subnetIPv6(s types.Subnet) []netip.Prefix {
	var out []netip.Prefix
	for _, a := range s.Ipv6CidrBlockAssociationSet {
		if st := a.Ipv6CidrBlockState; st != nil && st.State != types.SubnetCidrBlockStateCodeAssociated {
			continue
		}
		if p, err := netip.ParsePrefix(aws.ToString(a.Ipv6CidrBlock)); err == nil && p.Addr().Is6() {
			out = append(out, p)
		}
	}
	return out
}
