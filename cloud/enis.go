package cloud

import (
	"context"
	"fmt"
	"net/netip"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// ENIInfo is one network interface as EC2 describes it.
type ENIInfo struct {
	ID, MAC, SubnetID, VPCID, Status, Description string
	AttachmentID, AttachmentStatus                string // empty when not attached
	InstanceID                                    string // the instance it is attached to; empty when not attached
	DeviceIndex                                   int    // -1 when not attached
	NetworkCard                                   int    // the attachment's network card (0 when not attached)
	InterfaceType                                 string // EC2's interfaceType: interface, trunk, efa, efa-only, branch, ...
	Attached                                      bool   // attachment attaching or attached
	DeleteOnTermination                           bool
	PrimaryIP                                     netip.Addr
	Secondary                                     []netip.Addr   // ascending, primary excluded
	Prefixes                                      []netip.Prefix // ascending
	Tags                                          map[string]string
	SecurityGroups                                []string
	CreatedAt                                     time.Time      // from TagCreatedAt; zero if absent
	IPv6s                                         []netip.Addr   // ipv6AddressesSet: /128s, ascending
	IPv6Prefixes                                  []netip.Prefix // ipv6PrefixSet: /80s, ascending
	// Described: EC2's own answer, with tags and interface type (not a view
	// made from IMDS, which has neither).
	Described bool
}

// Blocks is the ENI's assignable blocks as pool sees them: every secondary
// address as a /32 and every delegated prefix, ascending.
func (e ENIInfo) Blocks() []netip.Prefix {
	out := make([]netip.Prefix, 0, len(e.Secondary)+len(e.Prefixes))
	for _, a := range e.Secondary {
		out = append(out, netip.PrefixFrom(a, 32))
	}
	out = append(out, e.Prefixes...)
	sort.Slice(out, func(i, j int) bool { return out[i].Addr().Less(out[j].Addr()) })
	return out
}

// InstanceENIs lists every ENI attached (in any attachment state) to the
// instance, by device index: one logical DescribeNetworkInterfaces filtered
// by attachment.instance-id, paginated.
func (c *Client) InstanceENIs(ctx context.Context, instanceID string) ([]ENIInfo, error) {
	enis, err := c.describeENIs(ctx, []types.Filter{filter("attachment.instance-id", instanceID)})
	sort.Slice(enis, func(i, j int) bool { return enis[i].DeviceIndex < enis[j].DeviceIndex })
	return enis, err
}

// ENIByID describes one ENI by its ID, whatever it is attached to. An ENI
// EC2 does not have fails with KindNotFound: the confirmation reconcile
// needs before it drops an ENI or address a pod holds.
func (c *Client) ENIByID(ctx context.Context, id string) (ENIInfo, error) {
	out, err := call(ctx, c, "DescribeNetworkInterfaces", func(h ec2Handle) (*ec2.DescribeNetworkInterfacesOutput, error) {
		return h.client().DescribeNetworkInterfaces(ctx, &ec2.DescribeNetworkInterfacesInput{NetworkInterfaceIds: []string{id}})
	})
	if err != nil {
		return ENIInfo{}, err
	}
	if len(out.NetworkInterfaces) != 1 {
		return ENIInfo{}, &Error{Op: "ec2:DescribeNetworkInterfaces", Kind: KindOther,
			Msg: fmt.Sprintf("asked for %s, EC2 answered with %d ENIs", id, len(out.NetworkInterfaces))}
	}
	return eniInfo(out.NetworkInterfaces[0]), nil
}

// describeENIs pages by hand: the SDK's paginator takes the client as an
// interface, which would keep every EC2 operation in the binary (handle.go).
func (c *Client) describeENIs(ctx context.Context, filters []types.Filter) ([]ENIInfo, error) {
	const action = "DescribeNetworkInterfaces"
	var out []ENIInfo
	var token *string
	for {
		page, err := call(ctx, c, action, func(h ec2Handle) (*ec2.DescribeNetworkInterfacesOutput, error) {
			return h.client().DescribeNetworkInterfaces(ctx, &ec2.DescribeNetworkInterfacesInput{
				Filters: filters, MaxResults: aws.Int32(c.opts.PageSize), NextToken: token,
			})
		})
		if err != nil {
			return nil, err
		}
		for _, ni := range page.NetworkInterfaces {
			out = append(out, eniInfo(ni))
		}
		if aws.ToString(page.NextToken) == "" || aws.ToString(page.NextToken) == aws.ToString(token) {
			return out, nil
		}
		token = page.NextToken
	}
}

func filter(name string, values ...string) types.Filter {
	return types.Filter{Name: aws.String(name), Values: values}
}

// eniInfo converts EC2's description. Unparseable addresses are skipped
// rather than failing the whole listing.
func eniInfo(ni types.NetworkInterface) ENIInfo {
	e := ENIInfo{
		ID: aws.ToString(ni.NetworkInterfaceId), MAC: aws.ToString(ni.MacAddress),
		SubnetID: aws.ToString(ni.SubnetId), VPCID: aws.ToString(ni.VpcId),
		Status: string(ni.Status), Description: aws.ToString(ni.Description),
		DeviceIndex: -1, Tags: tagMap(ni.TagSet), InterfaceType: string(ni.InterfaceType), Described: true,
	}
	e.PrimaryIP, _ = netip.ParseAddr(aws.ToString(ni.PrivateIpAddress))
	if a := ni.Attachment; a != nil {
		e.AttachmentID, e.AttachmentStatus = aws.ToString(a.AttachmentId), string(a.Status)
		e.InstanceID = aws.ToString(a.InstanceId)
		e.Attached = a.Status == types.AttachmentStatusAttached || a.Status == types.AttachmentStatusAttaching
		e.DeleteOnTermination = aws.ToBool(a.DeleteOnTermination)
		if a.DeviceIndex != nil {
			e.DeviceIndex = int(*a.DeviceIndex)
		}
		e.NetworkCard = int(aws.ToInt32(a.NetworkCardIndex))
	}
	for _, p := range ni.PrivateIpAddresses {
		if a, err := netip.ParseAddr(aws.ToString(p.PrivateIpAddress)); err == nil && !aws.ToBool(p.Primary) {
			e.Secondary = append(e.Secondary, a)
		}
	}
	for _, p := range ni.Ipv4Prefixes {
		if pfx, err := netip.ParsePrefix(aws.ToString(p.Ipv4Prefix)); err == nil {
			e.Prefixes = append(e.Prefixes, pfx)
		}
	}
	for _, g := range ni.Groups {
		e.SecurityGroups = append(e.SecurityGroups, aws.ToString(g.GroupId))
	}
	sort.Slice(e.Secondary, func(i, j int) bool { return e.Secondary[i].Less(e.Secondary[j]) })
	sort.Slice(e.Prefixes, func(i, j int) bool { return e.Prefixes[i].Addr().Less(e.Prefixes[j].Addr()) })
	e.CreatedAt, _ = time.Parse(time.RFC3339, e.Tags[TagCreatedAt])
	e.IPv6s, e.IPv6Prefixes = eniIPv6(ni)
	return e
}

// CreateENIRequest asks for a new ENI with its addresses.
type CreateENIRequest struct {
	SubnetID    string
	Groups      []string // security groups; empty: the subnet's VPC default
	InstanceID  string   // the node: description "aws-K8S-<id>" and the instance_id tag
	Count       int      // secondary addresses, or /28 prefixes when Prefixes
	Prefixes    bool
	ClientToken string            // the intent's token, the same across retries: EC2 then returns the same ENI
	Tags        map[string]string // extra tags; the ownership tags are added
	Now         time.Time         // the createdAt tag; zero: the clock
}

// CreateENI creates an ENI with its addresses and tags in one call.
func (c *Client) CreateENI(ctx context.Context, req CreateENIRequest) (ENIInfo, error) {
	now := req.Now
	if now.IsZero() {
		now = c.now()
	}
	in := &ec2.CreateNetworkInterfaceInput{
		SubnetId:    aws.String(req.SubnetID),
		Groups:      req.Groups,
		Description: aws.String(DescriptionPrefix + req.InstanceID),
		TagSpecifications: []types.TagSpecification{{
			ResourceType: types.ResourceTypeNetworkInterface,
			Tags:         ec2Tags(c.ownerTags(req.InstanceID, now, req.Tags)),
		}},
	}
	if req.ClientToken != "" {
		in.ClientToken = aws.String(req.ClientToken)
	}
	if req.Count > 0 && req.Prefixes {
		in.Ipv4PrefixCount = aws.Int32(int32(req.Count))
	} else if req.Count > 0 {
		in.SecondaryPrivateIpAddressCount = aws.Int32(int32(req.Count))
	}
	out, err := call(ctx, c, "CreateNetworkInterface", func(h ec2Handle) (*ec2.CreateNetworkInterfaceOutput, error) {
		return h.client().CreateNetworkInterface(ctx, in)
	})
	if err != nil {
		return ENIInfo{}, err
	}
	if out.NetworkInterface == nil {
		return ENIInfo{}, ec2Error("CreateNetworkInterface", "", errEmpty("no networkInterface in the answer"))
	}
	return eniInfo(*out.NetworkInterface), nil
}

// AttachENI attaches the ENI at deviceIndex (network card 0).
func (c *Client) AttachENI(ctx context.Context, eniID, instanceID string, deviceIndex int) (string, error) {
	out, err := call(ctx, c, "AttachNetworkInterface", func(h ec2Handle) (*ec2.AttachNetworkInterfaceOutput, error) {
		return h.client().AttachNetworkInterface(ctx, &ec2.AttachNetworkInterfaceInput{
			NetworkInterfaceId: aws.String(eniID), InstanceId: aws.String(instanceID),
			DeviceIndex: aws.Int32(int32(deviceIndex)),
		})
	})
	if err != nil {
		return "", err
	}
	return aws.ToString(out.AttachmentId), nil
}

// SetDeleteOnTermination makes EC2 delete the ENI with the instance.
func (c *Client) SetDeleteOnTermination(ctx context.Context, eniID, attachmentID string) error {
	_, err := call(ctx, c, "ModifyNetworkInterfaceAttribute", func(h ec2Handle) (*ec2.ModifyNetworkInterfaceAttributeOutput, error) {
		return h.client().ModifyNetworkInterfaceAttribute(ctx, &ec2.ModifyNetworkInterfaceAttributeInput{
			NetworkInterfaceId: aws.String(eniID),
			Attachment: &types.NetworkInterfaceAttachmentChanges{
				AttachmentId: aws.String(attachmentID), DeleteOnTermination: aws.Bool(true),
			},
		})
	})
	return err
}

// DetachENI detaches an ENI. An attachment that no longer exists is done.
func (c *Client) DetachENI(ctx context.Context, attachmentID string, force bool) error {
	_, err := call(ctx, c, "DetachNetworkInterface", func(h ec2Handle) (*ec2.DetachNetworkInterfaceOutput, error) {
		return h.client().DetachNetworkInterface(ctx, &ec2.DetachNetworkInterfaceInput{
			AttachmentId: aws.String(attachmentID), Force: aws.Bool(force),
		})
	})
	if IsKind(err, KindNotFound) {
		return nil
	}
	return err
}

// DeleteENI deletes a detached ENI. An ENI that no longer exists is done.
func (c *Client) DeleteENI(ctx context.Context, eniID string) error {
	_, err := call(ctx, c, "DeleteNetworkInterface", func(h ec2Handle) (*ec2.DeleteNetworkInterfaceOutput, error) {
		return h.client().DeleteNetworkInterface(ctx, &ec2.DeleteNetworkInterfaceInput{NetworkInterfaceId: aws.String(eniID)})
	})
	if IsKind(err, KindNotFound) {
		return nil
	}
	return err
}
