package settings

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"vpc-cni/pool"
)

// Kind is what a knob's value is; the generic kinds are parsed and checked
// by the resolver from the row alone.
type Kind string

const (
	KindInt      Kind = "integer"  // Min..Max
	KindBool     Kind = "boolean"  // strconv.ParseBool
	KindDuration Kind = "duration" // seconds or a Go duration, not negative
	KindEnum     Kind = "enum"     // one of Allowed
	KindRate     Kind = "rate"     // calls per second, more than 0, at most Max
	KindText     Kind = "text"     // its own parser; Type says what it takes
)

// Scope says where a knob is set.
type Scope int

const (
	// NodeOnly: one value for the node.
	NodeOnly Scope = iota
	// PerProfile: the node's value, and PROFILE_<NAME>_<KEY> for one
	// profile's pool. A profile that sets any of them gets the others at
	// their defaults; one that sets none keeps the node's.
	PerProfile
	// ProfileOnly: PROFILE_<NAME>_<KEY> only (Name is the field).
	ProfileOnly
)

// Knob is one row of the registry: everything the code, the docs, the
// config example and the chart need to know about a knob. A knob's use is
// the code that reads its value; everything else derives from the row.
type Knob struct {
	Name    string
	Kind    Kind
	Default string // the value when unset, as `pool status` shows it; "" unset
	// DefaultFrom names the knob whose value is the default, when it is one.
	DefaultFrom string
	DefaultNote string   // appended to the default in the docs: " (computed)"
	Min, Max    int      // KindInt: the range; KindRate: Max
	Allowed     []string // KindEnum: the values, in the order messages list them
	Type        string   // KindText: what it takes, as the docs say; others: a note after the kind's words
	Scope       Scope
	Fate        Fate   // aws-node's variable: what migrate does with it; "": vpc-cni's own
	AWSDefault  string // aws-node's default, as its manifest spells it
	Doc         string // one line: what it does
	Example     string // a value for the config example

	// field is where Resolve puts a generic kind's value (*int, *bool,
	// *time.Duration); nil: the knob's own code resolves it.
	field func(*Effective) any
}

// Registry lists every knob, in the config example's order.
var Registry = []Knob{
	{Name: WarmENITarget, Kind: KindInt, Default: strconv.Itoa(pool.DefaultWarmENITarget), Max: 100, Scope: PerProfile, Fate: Carried, AWSDefault: "1",
		Doc:     "whole ENIs' worth of free addresses to keep (when neither WARM_IP_TARGET nor MINIMUM_IP_TARGET is set)",
		Example: "1", field: func(e *Effective) any { return &e.Pool.WarmENITarget }},
	{Name: WarmIPTarget, Kind: KindInt, DefaultNote: " (0)", Max: 100000, Scope: PerProfile, Fate: Carried,
		Doc: "exactly this many free addresses", Example: "5", field: func(e *Effective) any { return &e.Pool.WarmIPTarget }},
	{Name: MinIPTarget, Kind: KindInt, DefaultNote: " (0)", Max: 100000, Scope: PerProfile, Fate: Carried,
		Doc: "at least this many addresses in total", Example: "10", field: func(e *Effective) any { return &e.Pool.MinIPTarget }},
	{Name: PrefixDelegation, Kind: KindBool, Default: "false", Fate: Carried, AWSDefault: "false",
		Doc: "/28 prefixes instead of single addresses (Nitro instances)", Example: "false",
		field: func(e *Effective) any { return &e.Pool.PrefixDelegation }},
	{Name: WarmPrefixTarget, Kind: KindInt, DefaultNote: " (0)", Max: 10000, Scope: PerProfile, Fate: Carried,
		Doc: "with prefix delegation: whole free /28 prefixes to keep", Example: "1",
		field: func(e *Effective) any { return &e.Pool.WarmPrefixTarget }},
	{Name: MaxENI, Kind: KindInt, Default: "0", DefaultNote: " (the instance type's limit)", Max: 100, Fate: Carried,
		Doc: "at most this many ENIs", Example: "3", field: func(e *Effective) any { return &e.Pool.MaxENI }},
	{Name: MaxPods, Kind: KindInt, Default: "0", DefaultNote: " (computed)", Max: 100000,
		Doc: "at most this many pod addresses", Example: "29", field: func(e *Effective) any { return &e.Pool.MaxPods }},
	{Name: MaxPodsCap, Kind: KindInt, Default: "0",
		DefaultNote: " (EKS's ceiling: 110, or 250 on an instance of more than 30 vCPUs)", Max: 100000,
		Doc: "prefix delegation and IPv6: the ceiling on max pods", Example: "110",
		field: func(e *Effective) any { return &e.Pool.MaxPodsCap }},
	{Name: Cooldown, Kind: KindDuration, Default: shortDuration(pool.DefaultCooldown), Fate: Carried, AWSDefault: "30",
		Doc: "how long a freed address cools before it is reused", Example: "30",
		field: func(e *Effective) any { return &e.Pool.Cooldown }},
	{Name: ReleaseDelay, Kind: KindDuration, Default: shortDuration(pool.DefaultReleaseDelay), DefaultNote: ", or the cooldown + 60s if that is longer",
		Doc: "how long excess must last before it goes back to EC2; longer than the cooldown", Example: "3m"},
	{Name: ClusterName, Kind: KindText, Type: "string", Fate: Carried,
		Doc: "tags new ENIs cluster.k8s.amazonaws.com/name", Example: "my-cluster"},
	{Name: ENIMTU, Kind: KindInt, Default: strconv.Itoa(DefaultMTU), Min: MinMTU, Max: MaxMTU, Fate: Carried,
		AWSDefault: "9001", Doc: "MTU of secondary ENIs", Example: "9001", field: func(e *Effective) any { return &e.MTU }},
	{Name: EC2DescribeRate, Kind: KindRate, Default: DefaultEC2Rate, DefaultNote: " (burst 20)", Max: 1000,
		Doc: "the node's client-side budget for EC2 Describe calls, shared through the state file", Example: "2"},
	{Name: EC2MutatingRate, Kind: KindRate, Default: DefaultEC2Rate, DefaultNote: " (burst 20)", Max: 1000,
		Doc: "the node's client-side budget for mutating EC2 calls", Example: "2"},
	{Name: EC2ResyncInterval, Kind: KindDuration, Default: shortDuration(DefaultEC2Resync),
		Doc: "how often a pass reads EC2 although IMDS agrees with the state; 0 every pass", Example: "15m",
		field: func(e *Effective) any { return &e.EC2Resync }},
	{Name: AdaptiveGrowthWindow, Kind: KindDuration, Default: "0", DefaultNote: " (off)",
		Doc: "adaptive growth: a grow also covers the pods that arrived in this window", Example: "0",
		field: func(e *Effective) any { return &e.Pool.AdaptiveWindow }},

	{Name: ExternalSNAT, Kind: KindBool, Default: "false", Fate: Carried, AWSDefault: "false",
		Doc: "true: no SNAT (a NAT gateway or external SNAT does it)", Example: "false"},
	{Name: ExcludeSNATCIDRs, Kind: KindText, Type: "comma-separated IPv4 CIDRs", Fate: Carried,
		Doc: "destinations outside the VPC that pods reach with their own address", Example: "10.100.0.0/16,192.168.0.0/24"},
	{Name: RandomizeSNAT, Kind: KindEnum, Default: "prng", Allowed: []string{"prng", "hashrandom", "none"},
		Fate: Carried, AWSDefault: "prng", Doc: "SNAT source-port selection", Example: "prng"},
	{Name: NodePortSupport, Kind: KindBool, Default: "true", Fate: Carried, AWSDefault: "true",
		Doc: "mark NodePort connections so replies leave through the primary ENI", Example: "true"},
	{Name: ConnMark, Kind: KindText, Type: "32-bit non-zero integer (0x for hex)", Default: "0x80", Fate: Carried,
		AWSDefault: "0x80", Doc: "the connection mark of the node-level rules", Example: "0x80"},

	{Name: SubnetDiscovery, Kind: KindEnum, Default: DiscoveryWhenFull,
		Allowed: []string{DiscoveryAlways, DiscoveryNever, DiscoveryWhenFull}, Type: " (1 and 0 too, any case)",
		Fate: Carried, AWSDefault: "true", Doc: "where new ENIs go: another subnet of the zone tagged for it", Example: DiscoveryWhenFull},
	{Name: CustomNetworkCfg, Kind: KindBool, Default: "false", Fate: Carried, AWSDefault: "false",
		Doc: "custom networking: pods in the subnet of the node's zone line ENI_CONFIG_<ZONE>", Example: "false",
		field: func(e *Effective) any { return &e.Pool.CustomNetworking }},

	{Name: ExternalServiceCIDRs, Kind: KindText, Type: "comma-separated IPv4 CIDRs", Fate: Carried,
		Doc: "IPv4 CIDRs pods reach through the main table (the primary ENI)", Example: "10.100.0.0/16,172.16.0.0/12"},
	{Name: VethPrefix, Kind: KindText, Default: DefaultVethPrefix, Fate: Carried, AWSDefault: DefaultVethPrefix,
		Type: "string, 1–4 characters of letters, digits, -, _, .; not eth, lo or vlan",
		Doc:  "host veth names: this prefix and 11 hex digits", Example: DefaultVethPrefix},
	{Name: PodMTU, Kind: KindInt, DefaultFrom: ENIMTU, Min: MinMTU, Max: MaxMTU, Fate: Carried, AWSDefault: "9001",
		Doc: "MTU of pods' interfaces", Example: "9001"},
	{Name: ManageUntaggedENI, Kind: KindBool, Default: "true", Fate: Carried, AWSDefault: "true",
		Doc: "false: leave alone attached ENIs vpc-cni did not create and nobody tagged", Example: "true",
		field: func(e *Effective) any { return &e.ManageUntaggedENI }},
	{Name: AdditionalENITags, Kind: KindText, Type: "JSON object of string values", Default: "{}", Fate: Carried,
		AWSDefault: "{}", Doc: "tags for vpc-cni's ENIs", Example: `{"team":"net"}`},
	{Name: DisableLeakedENICleanup, Kind: KindBool, Default: "false", Fate: Carried, AWSDefault: "false",
		Doc: "true: no sweep of leaked ENIs", Example: "false", field: func(e *Effective) any { return &e.DisableLeakedENICleanup }},
	{Name: DisableProvisioning, Kind: KindBool, Default: "false", Fate: Carried, AWSDefault: "false",
		Doc: "true: no mutating EC2 call, ever", Example: "false", field: func(e *Effective) any { return &e.DisableProvisioning }},
	{Name: IMDSOnlyMode, Kind: KindBool, Default: "false", Fate: Carried, AWSDefault: "false",
		Doc: "true: no EC2 call at all, ever", Example: "false", field: func(e *Effective) any { return &e.IMDSOnly }},
	{Name: DisablePodV6, Kind: KindBool, Default: "false", Fate: Carried, AWSDefault: "false",
		Doc: "true: vpcctl install chains the tuning plugin that turns IPv6 off inside pods", Example: "false",
		field: func(e *Effective) any { return &e.DisablePodV6 }},
	{Name: BandwidthPlugin, Kind: KindBool, Default: "true", DefaultNote: " (aws-node's default is false)",
		Fate: Carried, AWSDefault: "false", Doc: "false: vpcctl install leaves out the bandwidth plugin", Example: "true",
		field: func(e *Effective) any { return &e.BandwidthPlugin }},
	{Name: EnableIPv6, Kind: KindBool, Default: "false", Fate: Carried, AWSDefault: "false",
		Doc: "pods get a VPC IPv6 address", Example: "false"},
	{Name: EnableIPv4, Kind: KindBool, Default: "true", Fate: Carried, AWSDefault: "true",
		Doc: "pods get a VPC IPv4 address", Example: "true"},
	{Name: EnableV4Egress, Kind: KindBool, Default: "true", Fate: Carried, AWSDefault: "true",
		Doc: "IPv6-only pods reach IPv4 through v4if0", Example: "true"},
	{Name: EnableV6Egress, Kind: KindBool, Default: "false", Fate: Carried, AWSDefault: "false",
		Doc: "IPv4-only pods reach IPv6 through v6if0", Example: "false"},
	{Name: NetworkPolicyMode, Kind: KindEnum, Allowed: []string{PolicyStandard, PolicyStrict}, Type: " (any case)",
		DefaultNote: " (no network policy)", Fate: Carried, AWSDefault: PolicyStandard,
		Doc: "network policy through aws-node's policy agent", Example: PolicyStandard},

	{Name: ProfileSecurityGroups, Kind: KindText, Scope: ProfileOnly, DefaultNote: " (the primary ENI's groups)",
		Type: "comma-separated security group IDs (sg-…) and tag selectors (tag:<key>=<value>), at most 16 groups in all",
		Doc:  "the security groups of the profile's ENIs", Example: "sg-0123456789abcdef0"},
	{Name: ProfileSubnets, Kind: KindText, Scope: ProfileOnly, DefaultNote: " (the node's subnet)",
		Type: "comma-separated subnet IDs (subnet-…) and tag selectors (tag:<key>=<value>)",
		Doc:  "where the profile's ENIs go", Example: "subnet-0123456789abcdef0,tag:vpc-cni/profile=gold"},
	{Name: ProfileSNAT, Kind: KindEnum, Scope: ProfileOnly, Default: SNATNode, Allowed: []string{SNATNode, SNATNone},
		Doc: "node: SNAT to the node's primary address outside the VPC; none: keep the pod's", Example: SNATNode},
	{Name: ProfileNamespaces, Kind: KindText, Scope: ProfileOnly, DefaultNote: " (any namespace)",
		Type: "comma-separated namespace names (DNS-1123 labels)",
		Doc:  "the namespaces whose pods may pick the profile", Example: "team-a,team-b"},
	{Name: Profiles, Kind: KindText, Type: "comma-separated profile names", DefaultNote: " (every configured profile)",
		Doc: "the network profiles this node serves", Example: "gold"},
	{Name: ProfileAdmission, Kind: KindBool, Default: "false",
		DefaultNote: " (the chart sets true when it renders its admission policy)",
		Doc:         "true: an admission policy decides which namespace may pick which profile", Example: "false",
		field: func(e *Effective) any { return &e.ProfileAdmission }},
}

// LookupKnob finds a knob's row by its name (a profile field by its suffix).
func LookupKnob(name string) (Knob, bool) {
	i := slices.IndexFunc(Registry, func(k Knob) bool { return k.Name == name })
	if i < 0 {
		return Knob{}, false
	}
	return Registry[i], true
}

// KeyRow finds the row of a key of the file: a knob's name, or a profile's
// PROFILE_<NAME>_<FIELD> (profile is then true).
func KeyRow(key string) (k Knob, profile, ok bool) {
	if k, ok := LookupKnob(key); ok && k.NodeKey() {
		return k, false, true
	}
	if _, field, err := ParseProfileKey(key); err == nil {
		k, ok := LookupKnob(field)
		return k, true, ok
	}
	return Knob{}, false, false
}

// DefaultOf says in a word what the key is when unset, for `pool status`:
// the row's default, the knob it defaults to, "node's" for a profile's
// target, "" for unset.
func DefaultOf(key string) string {
	k, profile, ok := KeyRow(key)
	switch {
	case !ok:
		return ""
	case profile && k.Scope == PerProfile:
		return "node's"
	case k.DefaultFrom != "":
		return k.DefaultFrom
	}
	return k.Default
}

// knob is LookupKnob for a name the code itself passes.
func knob(name string) Knob {
	k, ok := LookupKnob(name)
	if !ok {
		panic("settings: no registry row for " + name)
	}
	return k
}

// NodeKey reports whether the knob has a node-wide key (not ProfileOnly).
func (k Knob) NodeKey() bool { return k.Scope != ProfileOnly }

// ProfileKey reports whether PROFILE_<NAME>_<k.Name> is a key.
func (k Knob) ProfileKey() bool { return k.Scope != NodeOnly }

// TypeText says what the knob takes, as the docs' Type: line does.
func (k Knob) TypeText() string {
	switch k.Kind {
	case KindInt:
		return fmt.Sprintf("integer, %d..%d", k.Min, k.Max) + k.Type
	case KindBool:
		return "boolean" + k.Type
	case KindDuration:
		return "seconds or a duration, not negative" + k.Type
	case KindEnum:
		return orList(k.Allowed) + k.Type
	case KindRate:
		return fmt.Sprintf("number of calls per second, more than 0 and at most %d", k.Max) + k.Type
	}
	return k.Type
}

// DefaultText says the default, as the docs' Default: line does.
func (k Knob) DefaultText() string {
	switch {
	case k.DefaultFrom != "":
		return "the value of " + k.DefaultFrom + k.DefaultNote
	case k.Default == "":
		return "unset" + k.DefaultNote
	}
	return k.Default + k.DefaultNote
}

// orList joins words as "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// fileKeys lists the node-wide keys, in the registry's order.
func fileKeys() []string {
	var out []string
	for _, k := range Registry {
		if k.NodeKey() {
			out = append(out, k.Name)
		}
	}
	return out
}

// profileFields lists the fields of a profile's keys, the longest first so
// a key's suffix is matched whole.
func profileFields() []string {
	var out []string
	for _, k := range Registry {
		if k.ProfileKey() {
			out = append(out, k.Name)
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}
