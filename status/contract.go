// Package status is the read-only view of a node: what `vpcctl pool status`,
// doctor, metrics and events show. Load reads the store in one transaction
// and computes the figures with the knobs as the caller resolves them; it
// writes nothing.
//
// The exported types of this file are the CLI's JSON contract: `pool status
// -o json|yaml` (PoolStatus and the types it holds) and `events -o json`
// (EventView). Field names are stable and camelCase, durations are strings
// ("30s", printers.Duration), lists are never null and unset times are left
// out. Scripts depend on them: rename nothing, add with care.
package status

import (
	"time"

	"vpc-cni/hostnet"
	"vpc-cni/internal/printers"
	"vpc-cni/pool"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// PoolStatus is what `vpcctl pool status` shows.
type PoolStatus struct {
	Initialized bool             `json:"initialized"`
	StateDir    string           `json:"stateDir"`
	ConfigFile  string           `json:"configFile"`
	Node        *NodeStatus      `json:"node,omitempty"`
	Knobs       []KnobStatus     `json:"knobs"`
	Figures     pool.Figures     `json:"figures"`
	Pending     []pool.Action    `json:"pending"` // what the next reconcile would do
	Excess      *ExcessStatus    `json:"excess,omitempty"`
	Shortfall   *ShortfallStatus `json:"shortfall,omitempty"`
	ENIs        []ENIStatus      `json:"enis"`
	NotOurs     []NotOursStatus  `json:"notOurs"` // attached ENIs left alone, why, and their cost
	Assignments int              `json:"assignments"`
	Pods        []PodStatus      `json:"pods"` // who holds each assigned address
	Intents     int              `json:"intentsInFlight"`
	GrowBlocked string           `json:"growBlocked,omitempty"`
	// Full: whether a pod arriving now would get an address (free, or one
	// a grow pass gets); when not, what is full and what frees one. A full
	// node stays ready (CNI STATUS succeeds) and its ADDs fail with code 11.
	Full *pool.Fullness `json:"full,omitempty"`
	// NoProvisioning: why the pool never grows or shrinks (the operator's
	// DISABLE_NETWORK_RESOURCE_PROVISIONING or ENABLE_IMDS_ONLY_MODE).
	NoProvisioning string          `json:"noProvisioning,omitempty"`
	NoPrefixes     string          `json:"noPrefixesUntil,omitempty"` // prefix delegation falls back to single addresses
	LastReconcile  *LastPass       `json:"lastReconcile,omitempty"`
	EC2Reads       *EC2Reads       `json:"ec2Reads,omitempty"`
	NodeRules      *NodeRulesState `json:"nodeRules,omitempty"`
	// IPv6: the IPv6 pool (ENABLE_IPv6, IPv6-only and dual-stack modes).
	IPv6 *IPv6PoolStatus `json:"ipv6,omitempty"`
	// Profiles: each network profile's pool (Figures is the default
	// pool's); empty when none is configured or holds an ENI.
	Profiles []ProfileStatus `json:"profiles"`
}

// ProfileStatus is one network profile and its pool: how it is configured,
// the pool's figures as the next pass would compute them, what that pass
// would do, and what is full for its pods.
type ProfileStatus struct {
	settings.Profile
	// Configured is false for a profile whose ENIs are still attached but
	// which the configuration no longer names (its pool gives everything back).
	Configured bool           `json:"configured"`
	Figures    pool.Figures   `json:"figures"`
	Pending    []pool.Action  `json:"pending"`
	Full       *pool.Fullness `json:"full,omitempty"`
	ENIs       []string       `json:"enis"` // its ENIs' IDs
	// GrowBlocked: until when and why the pool's growth is backed off
	// (its subnets had no free address), as the default pool's growBlocked.
	GrowBlocked string `json:"growBlocked,omitempty"`
	// AnyPod: any pod may pick it (settings.Effective.OpenProfiles): no
	// namespace binds it on the node and no admission policy is declared.
	AnyPod bool `json:"anyPod"`
}

// IPv6PoolStatus is the IPv6 pool: one /80 on the primary ENI, the /128s
// pods hold from it. The warm targets do not apply to it.
type IPv6PoolStatus struct {
	Mode     string `json:"mode"`             // pool.FamilyIPv6 or pool.FamilyDualStack
	ENIID    string `json:"eniId,omitempty"`  // the ENI holding the /80
	Prefix   string `json:"prefix,omitempty"` // the /80 pods take from; absent before a pass gave one
	Assigned int    `json:"assigned"`         // /128s pods hold
	Cooling  int    `json:"cooling"`          // freed /128s still cooling
	// Stale: /128s pods hold from a /80 the ENI no longer has (removed
	// behind the node's back); they are kept until the pods are deleted.
	Stale int `json:"stale"`
	// EgressRange: where pods' egress addresses come from (v4if0 for
	// IPv6-only pods, v6if0 for IPv4 pods); EgressAssigned: how many pods hold one.
	EgressRange    string `json:"egressRange,omitempty"`
	EgressAssigned int    `json:"egressAssigned"`
}

// ENIStatus is one ENI with counts per address state.
type ENIStatus struct {
	ID          string      `json:"id"`
	DeviceIndex int         `json:"deviceIndex"`
	Card        int         `json:"card"`
	Class       string      `json:"class,omitempty"` // ours, adopted, not-ours; empty before the first EC2 read
	Why         string      `json:"why,omitempty"`
	Primary     bool        `json:"primary"`
	Ready       bool        `json:"ready"`
	MAC         string      `json:"mac"`
	PrimaryIP   string      `json:"primaryIp"`
	Blocks      int         `json:"blocks"`
	Free        int         `json:"free"`
	Cooling     int         `json:"cooling"`
	Assigned    int         `json:"assigned"`
	Releasing   int         `json:"releasing"`
	Addresses   []AddrState `json:"addresses"`
	// Profile: the network profile the ENI serves ("" for the default
	// pool); GroupsDrift: why its groups are not its profile's (no new pods).
	Profile     string `json:"profile,omitempty"`
	GroupsDrift string `json:"groupsDrift,omitempty"`
}

// AddrState is one address and its state.
type AddrState struct {
	IP    string    `json:"ip"`
	Block string    `json:"block"`
	State string    `json:"state"`
	Since time.Time `json:"since"`
	Owner string    `json:"owner,omitempty"` // "<containerID>/<ifName>"
	Pod   string    `json:"pod,omitempty"`   // "<namespace>/<name>" of the owner
}

// PodStatus is one pod interface holding an address.
type PodStatus struct {
	Pod         string    `json:"pod"` // "<namespace>/<name>"; "-" when the runtime passed no pod name
	Namespace   string    `json:"namespace,omitempty"`
	Name        string    `json:"name,omitempty"`
	ContainerID string    `json:"containerId"`
	IfName      string    `json:"ifName"`
	IP          string    `json:"ip"` // the VPC IPv4; "" for an IPv6-only pod
	IPv6        string    `json:"ipv6,omitempty"`
	EgressIP    string    `json:"egressIp,omitempty"` // v4if0 or v6if0
	ENIID       string    `json:"eniId"`
	Since       time.Time `json:"since"`
	Profile     string    `json:"profile,omitempty"` // the network profile the pod picked
}

// NodeStatus is the node's identity with its limits in camelCase (the
// stored record's limits are the policy's type, which has no JSON names).
type NodeStatus struct {
	store.Node
	Limits LimitsStatus `json:"limits"` // shadows Node.Limits
}

// LimitsStatus are the instance type's networking limits.
type LimitsStatus struct {
	MaxENIs    int `json:"maxEnis"`
	IPv4PerENI int `json:"ipv4PerEni"`
}

// KnobStatus is one knob as this invocation resolves it and as the last
// reconcile pass used it (absent before the first pass).
type KnobStatus struct {
	settings.Value
	// Default is the registry's word for the knob unset (settings.DefaultOf).
	Default  string          `json:"default,omitempty"`
	LastPass *settings.Value `json:"lastPass,omitempty"`
	Differs  bool            `json:"differsFromLastPass"`
}

// ExcessStatus is excess waiting for RELEASE_DELAY: the first reconcile at or
// after ReleaseAt returns it to EC2 if it is still excess then.
type ExcessStatus struct {
	Addresses int               `json:"addresses"`
	Since     time.Time         `json:"since"`
	ReleaseAt time.Time         `json:"releaseAt"`
	Delay     printers.Duration `json:"releaseDelay"`
}

// ShortfallStatus is what the pool lacks, what the next reconcile would add,
// and why the rest cannot be had.
type ShortfallStatus struct {
	Addresses int      `json:"addresses"`
	Planned   int      `json:"planned"` // addresses the next reconcile would add
	Unmet     int      `json:"unmet"`
	Reasons   []string `json:"reasons"`
}

// LastPass is the last reconcile pass: when, how long, what it did, and
// whether it failed.
type LastPass struct {
	Time          time.Time         `json:"time"`
	Duration      printers.Duration `json:"duration"`
	Actions       int               `json:"actions"`
	Calls         map[string]int    `json:"calls"`   // EC2 action -> calls
	Outcome       string            `json:"outcome"` // "ok" or "failed"
	Error         string            `json:"error,omitempty"`
	Cause         string            `json:"cause,omitempty"` // what the error means: credentials, endpoint, throttling ...
	LastLeakSweep time.Time         `json:"lastLeakSweep,omitzero"`
	Observed      string            `json:"observed,omitempty"` // where it read the ENIs: "imds" or "ec2: <why>"
}

// EC2Reads is when the passes read the node's ENIs from EC2 rather than IMDS
// (reconcile/observe.go): the last read, and when the safety net makes the
// next at the latest (zero when every pass reads EC2); ConfirmNeeded: the
// next pass reads EC2 to confirm this node's changes.
type EC2Reads struct {
	LastRead      time.Time `json:"lastRead,omitzero"`
	NextDue       time.Time `json:"nextDue,omitzero"`
	EveryPass     bool      `json:"everyPass,omitempty"`
	ConfirmNeeded bool      `json:"confirmNeeded,omitempty"`
}

// NodeRulesState is whether the node-level rules match the configuration.
// InPlace is true only when the rules exist and match; Managed is false
// where they are not this host's to keep (no link has the primary ENI's MAC).
type NodeRulesState struct {
	State   string `json:"state"` // one of the NodeRules* words
	InPlace bool   `json:"inPlace"`
	Managed bool   `json:"managed"`
	Detail  string `json:"detail"`
	hostnet.Status
}

// The words of NodeRulesState.State.
const (
	NodeRulesInPlace    = "in place"
	NodeRulesNotInPlace = "not in place"
	NodeRulesNotManaged = "not managed here"
	NodeRulesUnknown    = "unknown"
)

// Fault reports whether the rules need an operator: managed here and not in
// place, or not checkable.
func (s NodeRulesState) Fault() bool {
	return s.State == NodeRulesNotInPlace || s.State == NodeRulesUnknown
}

// EventView is an event with the pods it names: an event names an assignment
// by "<containerID>/<ifName>", which an operator cannot map to a pod.
type EventView struct {
	store.Event
	Pods []PodRef `json:"pods,omitempty"`
}

// PodRef is a pod an event's assignment key belongs to.
type PodRef struct {
	Pod         string `json:"pod"` // "<namespace>/<name>"
	ContainerID string `json:"containerId"`
	IfName      string `json:"ifName"`
}
