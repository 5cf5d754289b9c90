package cloud

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// AssignAddresses asks EC2 for count more secondary addresses (or /28
// prefixes) on the ENI and returns the new blocks, ascending: /32s, or /28s.
func (c *Client) AssignAddresses(ctx context.Context, eniID string, count int, prefixes bool) ([]netip.Prefix, error) {
	const action = "AssignPrivateIpAddresses"
	if count <= 0 {
		return nil, nil
	}
	in := &ec2.AssignPrivateIpAddressesInput{NetworkInterfaceId: aws.String(eniID)}
	if prefixes {
		in.Ipv4PrefixCount = aws.Int32(int32(count))
	} else {
		in.SecondaryPrivateIpAddressCount = aws.Int32(int32(count))
	}
	out, err := call(ctx, c, action, func(h ec2Handle) (*ec2.AssignPrivateIpAddressesOutput, error) {
		return h.client().AssignPrivateIpAddresses(ctx, in)
	})
	if err != nil {
		return nil, err
	}
	var blocks []netip.Prefix
	for _, a := range out.AssignedPrivateIpAddresses {
		ip, err := netip.ParseAddr(aws.ToString(a.PrivateIpAddress))
		if err != nil {
			return nil, ec2Error(action, "", fmt.Errorf("bad address in the answer: %w", err))
		}
		blocks = append(blocks, netip.PrefixFrom(ip, 32))
	}
	for _, p := range out.AssignedIpv4Prefixes {
		pfx, err := netip.ParsePrefix(aws.ToString(p.Ipv4Prefix))
		if err != nil {
			return nil, ec2Error(action, "", fmt.Errorf("bad prefix in the answer: %w", err))
		}
		blocks = append(blocks, pfx)
	}
	sort.Slice(blocks, func(i, j int) bool { return blocks[i].Addr().Less(blocks[j].Addr()) })
	return blocks, nil
}

// UnassignAddresses returns blocks to EC2 in one call per kind: /32s as
// PrivateIpAddress.N, prefixes as Ipv4Prefix.N.
func (c *Client) UnassignAddresses(ctx context.Context, eniID string, blocks []netip.Prefix) error {
	var ips, pfxs []string
	for _, b := range blocks {
		if !b.Addr().Is4() {
			return fmt.Errorf("cloud: unassign %s: not an IPv4 block", b)
		}
		if b.Bits() == 32 {
			ips = append(ips, b.Addr().String())
		} else {
			pfxs = append(pfxs, b.Masked().String())
		}
	}
	if len(ips) > 0 {
		if err := c.unassign(ctx, &ec2.UnassignPrivateIpAddressesInput{
			NetworkInterfaceId: aws.String(eniID), PrivateIpAddresses: ips}); err != nil {
			return err
		}
	}
	if len(pfxs) > 0 {
		return c.unassign(ctx, &ec2.UnassignPrivateIpAddressesInput{
			NetworkInterfaceId: aws.String(eniID), Ipv4Prefixes: pfxs})
	}
	return nil
}

func (c *Client) unassign(ctx context.Context, in *ec2.UnassignPrivateIpAddressesInput) error {
	_, err := call(ctx, c, "UnassignPrivateIpAddresses", func(h ec2Handle) (*ec2.UnassignPrivateIpAddressesOutput, error) {
		return h.client().UnassignPrivateIpAddresses(ctx, in)
	})
	return err
}

func errEmpty(msg string) error { return errors.New(msg) }
