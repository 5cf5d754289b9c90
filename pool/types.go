package pool

import (
	"net/netip"
	"time"
)

// State is the lifecycle state of one pod-usable address.
type State string

const (
	Free      State = "free"      // held by the node, ready for a pod
	Assigned  State = "assigned"  // held by a pod
	Cooling   State = "cooling"   // freed by a pod; reusable once the cooldown has passed
	Releasing State = "releasing" // being returned to EC2 (an intent is in flight)
)

// Limits are the instance type's networking limits (DescribeInstanceTypes).
type Limits struct {
	MaxENIs    int // network interfaces the instance type allows
	IPv4PerENI int // IPv4 addresses per ENI, the ENI's primary address included
	// VCPUs (DescribeInstanceTypes' DefaultVCpus) picks EKS's pod ceiling
	// under prefix delegation and IPv6; 0 is unknown (the built-in table
	// has no vCPUs, nor a store from before it was learnt).
	VCPUs int `json:"VCPUs,omitempty"`
}

// Config is the effective configuration the policy acts on. Zero values mean
// "unset" for the targets, as in amazon-vpc-cni-k8s.
type Config struct {
	WarmENITarget    int
	WarmIPTarget     int
	MinIPTarget      int
	WarmPrefixTarget int
	PrefixDelegation bool
	MaxENI           int // 0: the instance limit only
	MaxPods          int // 0: computed (PodCapacity)
	// MaxPodsCap (MAX_PODS_CAP): the ceiling on max pods where addresses do
	// not bound it (prefix delegation, IPv6); 0: EKS's 110 or 250 by vCPUs.
	MaxPodsCap   int
	Cooldown     time.Duration // IP_COOLDOWN_PERIOD
	ReleaseDelay time.Duration // excess must last this long before it is released
	// AdaptiveWindow (ADAPTIVE_GROWTH_WINDOW): when > 0, growth expects as
	// many pods in the next window as arrived in the last one; 0 is off.
	AdaptiveWindow time.Duration
	// CustomNetworking (AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG): pods live on
	// secondary ENIs in another subnet; the primary ENI takes no pod
	// addresses and is never grown, and max pods shrinks to match.
	CustomNetworking bool
	// IP families. The zero Config is IPv4 only, as before these knobs.
	// IPv6 (ENABLE_IPv6): pods get a /128 from the primary ENI's /80.
	// IPv4Off (ENABLE_IPv4=false): pods get no VPC IPv4 (IPv6 only); the
	// IPv4 pool then has no targets and no growth.
	IPv6    bool
	IPv4Off bool
	// V4Egress (ENABLE_V4_EGRESS): IPv6-only pods get a v4if0 address from
	// EgressV4Range. V6Egress (ENABLE_V6_EGRESS): IPv4-only pods get a v6if0
	// address from EgressV6Range.
	V4Egress bool
	V6Egress bool
	// Profile names the pool this configuration governs: "" is the node's
	// default pool, else a network profile's (PROFILE_<NAME>_* keys). A
	// pool sees only its own ENIs; the others only take their ENI slots.
	Profile Pool `json:"profile,omitempty"`
	// Retired: a profile no longer configured whose ENIs are still
	// attached: its pool keeps what its pods hold and gives the rest back.
	Retired bool `json:"retired,omitempty"`
}

// Addr is one pod-usable address.
type Addr struct {
	IP    netip.Addr
	State State
	Since time.Time // when it entered State; for Cooling, when the pod freed it
	Owner string    // assignment key ("<containerID>/<ifName>") when Assigned
}

// Block is what EC2 assigns to an ENI: one secondary address (/32) or one
// delegated prefix (/28). Addrs lists every address of the block, ascending.
type Block struct {
	CIDR      netip.Prefix
	Releasing bool // an Unassign of this block is in flight
	Addrs     []Addr
}

// IsPrefix reports whether the block is a delegated prefix rather than a /32.
func (b Block) IsPrefix() bool { return b.CIDR.Bits() < 32 }

// ENI is one network interface attached to the node.
type ENI struct {
	ID          string
	DeviceIndex int // 0 is the primary ENI, which is never deleted
	MAC         string
	PrimaryIP   netip.Addr // never a pod address
	SubnetID    string
	SubnetCIDR  netip.Prefix
	Ready       bool // host networking set up; its addresses may be handed out
	CreatedAt   time.Time
	Blocks      []Block // ascending by CIDR
	Card        int     // the attachment's network card; device indexes are per card
	Class       Class   // "" for an ENI recorded before classes (see Deletable)
	Why         string  // the reason for Class, e.g. "no_manage", "trunk", "card 1"
	Facts       ENIFacts
	// Profile is the network profile whose pods the ENI serves ("" for the
	// default pool), from its vpc-cni.io/profile tag. GroupsDrift says why
	// its security groups are not its profile's any more ("" when they
	// are): it then gets no new pods (a reconcile pass sets it).
	Profile     Pool
	GroupsDrift string
	// Groups: a profile ENI's security groups, sorted, as EC2 showed them
	// when they were last checked against its profile's; a pass at rest
	// compares IMDS's with them (a profile whose groups are given by tag
	// cannot be checked without EC2).
	Groups []string
}

// Primary reports whether this is the instance's primary ENI.
func (e ENI) Primary() bool { return e.DeviceIndex == 0 && e.Card == 0 }

// Snapshot is the node's pool as the store holds it.
type Snapshot struct {
	ENIs             []ENI     // ascending by DeviceIndex
	ExcessSince      time.Time // when the current excess was first seen; zero if none
	GrowBlockedUntil time.Time // subnet exhaustion back-off: no growth before this
	GrowBlockedWhy   string
	// NoPrefixesUntil: the subnet had no free /28 (InsufficientCidrBlocks);
	// in prefix mode growth uses single /32s before this. Zero if never.
	NoPrefixesUntil time.Time
	// FullSubnets: subnets that answered "no free addresses", each until
	// when; ENIs in them are not grown (new ENIs go elsewhere instead).
	FullSubnets map[string]time.Time
	// Profiles holds each profile pool's own timers, by profile name; the
	// fields above are the default pool's (ForPool swaps them in).
	Profiles map[Pool]Timers
}

// Timers are one pool's growth and release timers.
type Timers struct {
	ExcessSince      time.Time `json:"excessSince,omitzero"`
	GrowBlockedUntil time.Time `json:"growBlockedUntil,omitzero"`
	GrowBlockedWhy   string    `json:"growBlockedWhy,omitempty"`
}

// Input is everything the policy decides from.
type Input struct {
	Limits   Limits
	Config   Config
	Snapshot Snapshot
	Now      time.Time
	// Waiting is how many pods are waiting for an address right now (ADDs
	// that found the pool empty): growth serves them on top of the targets,
	// so a burst costs one EC2 call, not one per pod.
	Waiting int
}

// ActionKind names one EC2 mutation.
type ActionKind string

const (
	CreateENI ActionKind = "create-eni" // CreateNetworkInterface with Count addresses/prefixes, then attach at DeviceIndex
	Assign    ActionKind = "assign"     // AssignPrivateIpAddresses: Count addresses/prefixes on ENIID
	Unassign  ActionKind = "unassign"   // UnassignPrivateIpAddresses: Release on ENIID
	DeleteENI ActionKind = "delete-eni" // detach and delete ENIID
)

// Action is one step of a plan.
type Action struct {
	Kind        ActionKind     `json:"kind"`
	ENIID       string         `json:"eniId,omitempty"`
	DeviceIndex int            `json:"deviceIndex"`
	Count       int            `json:"count,omitempty"`   // addresses, or prefixes when Prefixes
	Prefixes    bool           `json:"prefixes"`          // the unit is a /28 prefix
	Profile     Pool           `json:"profile,omitempty"` // the pool the action is for (CreateENI: the new ENI's profile)
	Release     []netip.Prefix `json:"release,omitempty"` // blocks to unassign
	Reason      string         `json:"reason"`
}

// Figures are the numbers behind a plan, in addresses.
type Figures struct {
	Mode      string `json:"mode"` // "secondary-ip" or "prefix"
	Free      int    `json:"free"`
	Cooling   int    `json:"cooling"`
	Assigned  int    `json:"assigned"`
	Releasing int    `json:"releasing"`
	Total     int    `json:"total"` // free + cooling + assigned
	Shortfall int    `json:"shortfall"`
	Waiting   int    `json:"waiting,omitempty"` // pods waiting for an address, counted in the shortfall
	Excess    int    `json:"excess"`
	ENIs      int    `json:"enis"`
	// Others: card 0 ENIs of the other pools (network profiles, or the
	// default pool for a profile's figures): each takes one of MaxENIs.
	Others  int    `json:"otherPools,omitempty"`
	Profile Pool   `json:"profile,omitempty"` // the pool: "" for the default, else the profile
	MaxENIs int    `json:"maxEnis"`           // min(MAX_ENI, instance limit)
	MaxPods int    `json:"maxPods"`
	NotOurs int    `json:"notOurs,omitempty"` // card 0 slots taken by ENIs that are not vpc-cni's (counted in MaxENIs and MaxPods)
	Policy  string `json:"policy"`            // which target rule applied, e.g. "WARM_IP_TARGET=5 MINIMUM_IP_TARGET=10"
}

// Plan is the ordered EC2 work that brings the pool to its targets.
type Plan struct {
	Actions     []Action  `json:"actions"`
	Figures     Figures   `json:"figures"`
	ExcessSince time.Time `json:"excessSince"` // to persist for the next pass
}

// Empty reports whether the plan asks for no EC2 work.
func (p Plan) Empty() bool { return len(p.Actions) == 0 }
