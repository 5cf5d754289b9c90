package reconcile

import (
	"context"
	"net/netip"
	"time"

	"vpc-cni/cloud"
	"vpc-cni/pool"
)

// Cloud is what a pass needs from IMDS and EC2, by role: Metadata (IMDS,
// free and per instance), EC2Reader (describes: the account's budget, change
// nothing) and EC2Writer (everything that changes EC2). *cloud.Client
// implements all three, against EC2 or, in tests and what-if, the emulator.
// A mode that forbids EC2 calls swaps a role for a refusing one (gate), so
// a method belongs to exactly one role: one that changes EC2, however
// rarely, is an EC2Writer's.
//
// Common to every method: an error is a *cloud.Error or wraps one, so
// cloud.Classify gives its Kind (throttled, unreachable, no-credentials,
// unauthorized, ...); a cancelled or expired ctx gives KindTimeout. The SDK
// retries throttling and 5xx answers within ctx. No method is called with
// the store open.
type Cloud interface {
	Metadata
	EC2Reader
	EC2Writer
}

var _ Cloud = (*cloud.Client)(nil)

// Metadata is the node's own view from the instance metadata service: no
// EC2 call, no IAM permission, no share of the account's EC2 budget. Every
// method is a pure read, so idempotent; IMDS may lag EC2 after a change.
// Errors: KindUnreachable (no IMDS), KindTimeout, KindOther for an answer
// that does not parse.
type Metadata interface {
	// Identity reads the node's identity: instance ID and type, zone,
	// region, VPC and its CIDRs, subnet, primary ENI, MAC, address and
	// groups. The client caches the first success; an error returns no
	// partial identity.
	Identity(ctx context.Context) (cloud.Identity, error)
	// Self reads the instance ID and primary MAC (two reads, never cached):
	// what every pass compares the stored node with.
	Self(ctx context.Context) (cloud.Self, error)
	// AttachedInterfaces lists the ENIs IMDS shows attached, with their
	// addresses and prefixes, by device index, so a pass at rest reads it
	// instead of EC2. An ENI that vanishes while it is read is left out; on
	// an error the list is not to be used and the pass reads EC2 instead.
	AttachedInterfaces(ctx context.Context) ([]cloud.IMDSInterface, error)
	// AttachedInterfacesIPv6 is AttachedInterfaces with each ENI's IPv6
	// /128s, /80s and subnet /64 read too (three more reads per ENI): what
	// a pass at rest reads when pods take IPv6. Errors as AttachedInterfaces.
	AttachedInterfacesIPv6(ctx context.Context) ([]cloud.IMDSInterface, error)
	// VPCCIDRs reads the VPC's IPv4 CIDRs, secondary ones included, for the
	// ENI with this MAC (one read), so a CIDR associated after the node was
	// learnt is not SNATed. On an error the caller keeps the learnt CIDRs.
	VPCCIDRs(ctx context.Context, mac string) ([]netip.Prefix, error)
	// ENIGroups reads the security group IDs of the ENI with this MAC (one
	// read, cheap enough for every pass).
	ENIGroups(ctx context.Context, mac string) ([]string, error)
	// PrimaryIPv6 reads the first IPv6 address of the ENI with this MAC
	// (<mac>/ipv6s, one read): the node's IPv6, which ENABLE_V6_EGRESS
	// SNATs IPv4 pods' v6if0 traffic to. The zero Addr and no error when the
	// ENI has no IPv6.
	PrimaryIPv6(ctx context.Context, mac string) (netip.Addr, error)
}

// EC2Reader is EC2's describes: they change nothing in EC2, so each may be
// repeated and none needs an intent, but each spends the account's EC2
// request budget. Errors beyond the common ones: KindUnauthorized naming
// the missing IAM action, KindThrottled.
type EC2Reader interface {
	// Instance describes one instance (DescribeInstances): its type, zone,
	// subnet and VPC, to check what IMDS said before it is stored for good.
	// KindNotFound when EC2 has no such instance in the region.
	Instance(ctx context.Context, id string) (cloud.Instance, error)
	// InstanceLimits reads the instance type's networking limits
	// (DescribeInstanceTypes). They never change, so a node asks once.
	// KindNotFound for a type EC2 does not know.
	InstanceLimits(ctx context.Context, instanceType string) (pool.Limits, cloud.InstanceTypeInfo, error)
	// InstanceENIs lists every ENI attached to the instance, in any
	// attachment state, by device index (one logical
	// DescribeNetworkInterfaces, paginated). On error the list may be
	// partial and is not to be used.
	InstanceENIs(ctx context.Context, instanceID string) ([]cloud.ENIInfo, error)
	// ENIByID describes one ENI wherever it is attached (the evidence a merge
	// needs before it drops an ENI or block a pod holds); KindNotFound when
	// EC2 has no such ENI.
	ENIByID(ctx context.Context, id string) (cloud.ENIInfo, error)
	// ZoneSubnets lists the VPC's subnets in the zone with their tags and
	// free counts, most free first, ties by ID (subnet discovery). One call;
	// an empty list is not an error.
	ZoneSubnets(ctx context.Context, vpcID, az string) ([]cloud.Subnet, error)
	// Subnet describes one subnet by ID (its CIDR and free count);
	// KindNotFound when there is none.
	Subnet(ctx context.Context, subnetID string) (cloud.Subnet, error)
	// TaggedGroups lists the VPC's security groups carrying the tag key
	// with one of values, with their tags, sorted by ID (one logical
	// DescribeSecurityGroups, paginated); an empty list is not an error.
	TaggedGroups(ctx context.Context, vpcID, key string, values []string) ([]cloud.SecurityGroup, error)
}

// EC2Writer is every call that changes EC2. The caller holds the reconcile
// lock and, for a call whose outcome it must learn, records an intent
// first: an error from a mutation whose answer was lost (KindTimeout,
// KindUnreachable, a 5xx after retries) leaves its outcome unknown, and
// the next pass reads EC2 to learn it. Errors beyond the common ones:
// KindUnauthorized naming the missing IAM action, KindThrottled. A mode
// that forbids mutations answers every method with an error and no call
// (refusingWriter), so a method added here does not compile until that
// gate answers it too.
type EC2Writer interface {
	// CreateENI creates an ENI in req.SubnetID with req.Count addresses (or
	// /28 prefixes), req.Groups and the ownership tags, in one call: all or
	// nothing. Idempotent by req.ClientToken: a replay with the same token
	// and parameters returns the same ENI; other parameters are refused
	// (IdempotentParameterMismatch). Errors: KindSubnetFull, KindNoFreePrefix,
	// KindLimit; a lost answer leaves an ENI tagged with the intent's token,
	// which repair and the leaked-ENI sweep find.
	CreateENI(ctx context.Context, req cloud.CreateENIRequest) (cloud.ENIInfo, error)
	// AttachENI attaches the ENI to the instance at deviceIndex on network
	// card 0 and returns the attachment ID. Not idempotent: attaching an
	// attached ENI, or at a taken device index, is refused (KindLimit when the
	// instance has no free slot).
	AttachENI(ctx context.Context, eniID, instanceID string, deviceIndex int) (string, error)
	// SetDeleteOnTermination makes EC2 delete the ENI with the instance
	// (ModifyNetworkInterfaceAttribute on the attachment). Idempotent;
	// KindNotFound when the attachment is gone.
	SetDeleteOnTermination(ctx context.Context, eniID, attachmentID string) error
	// AssignAddresses asks EC2 for count more secondary addresses (or /28
	// prefixes) on the ENI in one call, all or nothing, and returns the new
	// blocks ascending; count <= 0 makes no call. Not idempotent: each call
	// adds count more (an assign whose answer was lost is adopted by the next
	// merge). Errors: KindSubnetFull, KindNoFreePrefix, KindLimit (the ENI is
	// full).
	AssignAddresses(ctx context.Context, eniID string, count int, prefixes bool) ([]netip.Prefix, error)
	// UnassignAddresses returns blocks to EC2: one call for the /32s, one for
	// the prefixes, so on an error the /32s may be gone and the prefixes not.
	// A block the ENI no longer holds makes EC2 refuse its call: callers pass
	// only blocks EC2 last showed on the ENI. A block that is not IPv4 fails
	// before any call.
	UnassignAddresses(ctx context.Context, eniID string, blocks []netip.Prefix) error
	// DetachENI detaches an ENI (force: even if the instance's OS holds it).
	// An attachment that no longer exists counts as done: idempotent. The
	// detach completes after the answer; DeleteENI may meanwhile be refused
	// with KindInUse.
	DetachENI(ctx context.Context, attachmentID string, force bool) error
	// DeleteENI deletes a detached ENI. One that no longer exists counts as
	// done: idempotent. KindInUse while a detach is still completing.
	DeleteENI(ctx context.Context, eniID string) error
	// LeakedENIs lists, sorted by ID, the ENIs this node created and lost: in
	// the VPC (and the cluster), tagged with instanceID, available, described
	// aws-K8S-, created more than olderThan before now. A writer's because it
	// is not a pure read: an ENI lacking a createdAt tag is tagged with now
	// (CreateTags) and left for a later sweep; an error there stops the list
	// (the tags already set stay, and a repeat skips those ENIs).
	LeakedENIs(ctx context.Context, vpcID, instanceID string, olderThan time.Duration, now time.Time) ([]cloud.ENIInfo, error)
	// SetENIGroups replaces the ENI's security groups with groups (one
	// ModifyNetworkInterfaceAttribute). Idempotent: setting the groups an ENI
	// already has changes nothing.
	SetENIGroups(ctx context.Context, eniID string, groups []string) error
	// TagENI sets tags on an ENI (one CreateTags); existing keys are
	// overwritten, others kept. Idempotent. No call for no tags.
	TagENI(ctx context.Context, eniID string, tags map[string]string) error
	// AssignIPv6Prefix asks EC2 for one /80 on the ENI (AssignIpv6Addresses
	// with Ipv6PrefixCount=1) and returns it. Not idempotent: each call adds
	// one (a /80 whose answer was lost is adopted by the next pass). Errors:
	// cloud.ErrSubnetNoIPv6 (KindOther) when the subnet has no IPv6 CIDR,
	// KindNoFreePrefix, KindLimit (the ENI's IPv6 slots are used up).
	AssignIPv6Prefix(ctx context.Context, eniID string) (netip.Prefix, error)
	// UnassignIPv6 returns IPv6 /128s and /80s of the ENI in one call, all
	// or nothing; nothing to return is no call. One the ENI no longer holds
	// makes EC2 refuse the whole call (KindOther), so repeating one that
	// succeeded is refused too. A block that is not IPv6 fails before any
	// call.
	UnassignIPv6(ctx context.Context, eniID string, addrs []netip.Addr, prefixes []netip.Prefix) error
}
