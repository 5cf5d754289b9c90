package cloud

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
)

// Identity is what IMDS says about this instance and its primary ENI.
type Identity struct {
	InstanceID, InstanceType, Region, AZ    string
	PrimaryMAC, PrimaryENI, VPCID, SubnetID string
	PrimaryIP                               netip.Addr
	SubnetCIDR                              netip.Prefix
	VPCCIDRs                                []netip.Prefix
	SecurityGroups                          []string
}

// IMDSInterface is one attached ENI as IMDS shows it. IMDS lags EC2 after an
// attach, assign or unassign; use it for the MAC → device mapping, and EC2 for
// the addresses.
type IMDSInterface struct {
	MAC         string
	ENIID       string
	SubnetID    string
	DeviceIndex int
	NetworkCard int          // IMDS network-card; 0 when IMDS has none (single-card types)
	IPv4s       []netip.Addr // the ENI's primary address first
	Prefixes    []netip.Prefix
	// Read by AttachedInterfacesIPv6 only (AttachedInterfaces leaves them
	// empty): ipv6s, ipv6-prefix, subnet-ipv6-cidr-blocks.
	IPv6s          []netip.Addr   // ascending as IMDS lists them; /128s only
	IPv6Prefixes   []netip.Prefix // the ENI's /80s
	SubnetIPv6CIDR netip.Prefix   // invalid when the subnet has no IPv6 CIDR
}

// imdsReader reads metadata paths, remembering the first failure so a
// sequence of reads stays short to write.
type imdsReader struct {
	ctx context.Context
	md  *imds.Client
	url string
	err error
}

func (r *imdsReader) get(path string) string {
	if r.err != nil {
		return ""
	}
	v, err := getMetadata(r.ctx, r.md, r.url, path)
	r.err = err
	return v
}

func (r *imdsReader) lines(path string) []string { return strings.Fields(r.get(path)) }

func (r *imdsReader) addr(path string) netip.Addr {
	s := r.get(path)
	if r.err != nil {
		return netip.Addr{}
	}
	a, err := netip.ParseAddr(s)
	r.parsed(path, err)
	return a
}

func (r *imdsReader) prefixes(path string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range r.lines(path) {
		p, err := netip.ParsePrefix(s)
		r.parsed(path, err)
		out = append(out, p)
	}
	return out
}

func (r *imdsReader) parsed(path string, err error) {
	if err != nil && r.err == nil {
		r.err = &Error{Op: "imds:GET " + path, Kind: KindOther, Msg: "unexpected value: " + err.Error(), Err: err}
	}
}

// VPCCIDRs reads the VPC's IPv4 CIDRs, secondary ones too, from IMDS: one
// read, so that a CIDR associated after the node was learnt is not SNATed.
func (c *Client) VPCCIDRs(ctx context.Context, mac string) ([]netip.Prefix, error) {
	r, err := c.reader(ctx)
	if err != nil {
		return nil, err
	}
	cidrs := r.prefixes("network/interfaces/macs/" + mac + "/vpc-ipv4-cidr-blocks")
	return cidrs, r.err
}

// reader is an imdsReader for a few reads under ctx.
func (c *Client) reader(ctx context.Context) (*imdsReader, error) {
	md, err := c.metadata(ctx)
	if err != nil {
		return nil, err
	}
	_, u := c.endpoints()
	return &imdsReader{ctx: ctx, md: md, url: u}, nil
}

// Identity reads the instance's identity from IMDS (once per Client).
func (c *Client) Identity(ctx context.Context) (Identity, error) {
	c.mu.Lock()
	cached := c.identity
	c.mu.Unlock()
	if cached != nil {
		return *cached, nil
	}
	md, err := c.metadata(ctx)
	if err != nil {
		return Identity{}, err
	}
	_, u := c.endpoints()
	r := &imdsReader{ctx: ctx, md: md, url: u}
	id := Identity{
		InstanceID:   r.get("instance-id"),
		InstanceType: r.get("instance-type"),
		AZ:           r.get("placement/availability-zone"),
		PrimaryMAC:   r.get("mac"),
		PrimaryIP:    r.addr("local-ipv4"),
	}
	id.Region = c.regionOf(ctx, r, id.AZ)
	mac := "network/interfaces/macs/" + id.PrimaryMAC + "/"
	id.PrimaryENI = r.get(mac + "interface-id")
	id.SubnetID = r.get(mac + "subnet-id")
	id.VPCID = r.get(mac + "vpc-id")
	if ps := r.prefixes(mac + "subnet-ipv4-cidr-block"); len(ps) == 1 {
		id.SubnetCIDR = ps[0]
	}
	id.VPCCIDRs = r.prefixes(mac + "vpc-ipv4-cidr-blocks")
	id.SecurityGroups = r.lines(mac + "security-group-ids")
	if r.err != nil {
		return Identity{}, r.err
	}
	c.mu.Lock()
	c.identity = &id
	c.mu.Unlock()
	return id, nil
}

// regionOf reads placement/region; where IMDS lacks it, the AZ without its letter.
func (c *Client) regionOf(ctx context.Context, r *imdsReader, az string) string {
	if r.err != nil {
		return ""
	}
	region, err := getMetadata(ctx, r.md, r.url, "placement/region")
	if IsKind(err, KindNotFound) {
		return strings.TrimRight(az, "abcdefghijklmnopqrstuvwxyz")
	}
	r.err = err
	return region
}

// AttachedInterfaces lists the ENIs IMDS shows as attached, by device index.
// An ENI that vanishes while it is being read is left out.
func (c *Client) AttachedInterfaces(ctx context.Context) ([]IMDSInterface, error) {
	return c.attachedInterfaces(ctx, false)
}

func (c *Client) attachedInterfaces(ctx context.Context, v6 bool) ([]IMDSInterface, error) {
	md, err := c.metadata(ctx)
	if err != nil {
		return nil, err
	}
	_, u := c.endpoints()
	r := &imdsReader{ctx: ctx, md: md, url: u}
	macs := r.lines("network/interfaces/macs/")
	if r.err != nil {
		return nil, r.err
	}
	// One reader per interface, all at once: a pass at rest reads only
	// IMDS, and 15 ENIs are some 70 requests when read one after another.
	type read struct {
		iface IMDSInterface
		ok    bool
		err   error
	}
	reads := make([]read, len(macs))
	var wg sync.WaitGroup
	for i, mac := range macs {
		wg.Go(func() {
			ri := &imdsReader{ctx: ctx, md: md, url: u}
			iface, ok, err := readInterface(ri, strings.TrimSuffix(mac, "/"), v6)
			reads[i] = read{iface, ok, cmp.Or(err, ri.err)}
		})
	}
	wg.Wait()
	var out []IMDSInterface
	for _, rd := range reads {
		if rd.err != nil {
			return nil, rd.err
		}
		if rd.ok {
			out = append(out, rd.iface)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return cmp.Or(cmp.Compare(out[i].NetworkCard, out[j].NetworkCard), cmp.Compare(out[i].DeviceIndex, out[j].DeviceIndex)) < 0
	})
	return out, nil
}

func readInterface(r *imdsReader, mac string, v6 bool) (IMDSInterface, bool, error) {
	base := "network/interfaces/macs/" + mac + "/"
	iface := IMDSInterface{MAC: mac, ENIID: r.get(base + "interface-id")}
	dev := r.get(base + "device-number")
	if IsKind(r.err, KindNotFound) {
		r.err = nil // detached since the listing
		return IMDSInterface{}, false, nil
	}
	if r.err != nil {
		return IMDSInterface{}, false, r.err
	}
	n, err := strconv.Atoi(dev)
	if err != nil {
		return IMDSInterface{}, false, fmt.Errorf("imds: %sdevice-number %q: %w", base, dev, err)
	}
	iface.DeviceIndex = n
	if card := optionalLines(r, base+"network-card"); len(card) == 1 {
		iface.NetworkCard, err = strconv.Atoi(card[0])
		r.parsed(base+"network-card", err)
	}
	iface.SubnetID = r.get(base + "subnet-id")
	for _, s := range optionalLines(r, base+"local-ipv4s") {
		a, err := netip.ParseAddr(s)
		r.parsed(base+"local-ipv4s", err)
		iface.IPv4s = append(iface.IPv4s, a)
	}
	for _, s := range optionalLines(r, base+"ipv4-prefix") {
		p, err := netip.ParsePrefix(s)
		r.parsed(base+"ipv4-prefix", err)
		iface.Prefixes = append(iface.Prefixes, p)
	}
	if v6 {
		readInterfaceIPv6(r, base, &iface)
	}
	return iface, r.err == nil, r.err
}

// optionalLines reads a list that IMDS answers with 404 when it is empty.
func optionalLines(r *imdsReader, path string) []string {
	l := r.lines(path)
	if IsKind(r.err, KindNotFound) {
		r.err = nil
		return nil
	}
	return l
}

// getMetadata reads one IMDS path as trimmed text.
func getMetadata(ctx context.Context, md *imds.Client, url, path string) (string, error) {
	out, err := md.GetMetadata(ctx, &imds.GetMetadataInput{Path: path})
	if err != nil {
		return "", imdsError(path, url, err)
	}
	defer out.Content.Close()
	b, err := io.ReadAll(out.Content)
	if err != nil {
		return "", imdsError(path, url, err)
	}
	return strings.TrimSpace(string(b)), nil
}
