// Package settings resolves the operator's configuration. Each knob comes
// from, highest first: the override persisted by `vpcctl pool warm`, the
// process environment, the configuration file (/etc/vpc-cni/config), the
// default. A bad value is an error that names the variable and where it was
// set; it is never replaced by a default.
package settings

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"vpc-cni/pool"
)

// Source says where an effective value came from.
type Source string

const (
	FromStore   Source = "store"
	FromEnv     Source = "env"
	FromFile    Source = "file"
	FromDefault Source = "default"
)

// Knob names, as users know them from amazon-vpc-cni-k8s.
const (
	WarmENITarget    = "WARM_ENI_TARGET"
	WarmIPTarget     = "WARM_IP_TARGET"
	MinIPTarget      = "MINIMUM_IP_TARGET"
	WarmPrefixTarget = "WARM_PREFIX_TARGET"
	PrefixDelegation = "ENABLE_PREFIX_DELEGATION"
	MaxENI           = "MAX_ENI"
	MaxPods          = "MAX_PODS"
	MaxPodsCap       = "MAX_PODS_CAP"
	Cooldown         = "IP_COOLDOWN_PERIOD"
	ReleaseDelay     = "RELEASE_DELAY"
	ClusterName      = "CLUSTER_NAME"
	ENIMTU           = "AWS_VPC_ENI_MTU"
)

// FileKeys are the keys the configuration file may set: every node-wide
// knob of the registry, in its order.
var FileKeys = fileKeys()

// The MTU range of an ENI and of a pod's interface: IPv4's minimum to EC2's
// jumbo frames.
const (
	MinMTU     = 576
	MaxMTU     = 9001
	DefaultMTU = MaxMTU
)

// Overrides are the targets an operator pins with `vpcctl pool warm`,
// persisted in the store. Nil means "not set".
type Overrides struct {
	WarmIP     *int `json:"warmIpTarget,omitempty"`
	MinIP      *int `json:"minimumIpTarget,omitempty"`
	WarmENI    *int `json:"warmEniTarget,omitempty"`
	WarmPrefix *int `json:"warmPrefixTarget,omitempty"`
}

// Empty reports whether no override is set.
func (o Overrides) Empty() bool {
	return o.WarmIP == nil && o.MinIP == nil && o.WarmENI == nil && o.WarmPrefix == nil
}

func (o Overrides) get(name string) *int {
	switch name {
	case WarmIPTarget:
		return o.WarmIP
	case MinIPTarget:
		return o.MinIP
	case WarmENITarget:
		return o.WarmENI
	case WarmPrefixTarget:
		return o.WarmPrefix
	}
	return nil
}

// Value is one knob's effective value and where it came from. Where is the
// file and line for FromFile.
type Value struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Source Source `json:"source"`
	Where  string `json:"where,omitempty"`
}

// Origin says where the value came from, for messages: "file
// /etc/vpc-cni/config:3", "env", "store", "default".
func (v Value) Origin() string {
	if v.Where != "" {
		return string(v.Source) + " " + v.Where
	}
	return string(v.Source)
}

// Effective is the resolved configuration.
type Effective struct {
	Pool        pool.Config `json:"-"` // the same values are in Values, as text
	ClusterName string      `json:"clusterName"`
	MTU         int         `json:"mtu"`
	// EC2Resync: how often a pass reads EC2 when IMDS agrees with the store.
	EC2Resync time.Duration `json:"ec2ResyncInterval"`
	// SubnetDiscovery: when new ENIs may leave the node's subnet
	// (DiscoveryWhenFull, DiscoveryAlways, DiscoveryNever).
	SubnetDiscovery string `json:"subnetDiscovery"`

	// aws-node's knobs (awsknobs.go), typed; Values has each one's source.
	ExternalServiceCIDRs    []netip.Prefix    `json:"externalServiceCidrs,omitempty"`
	VethPrefix              string            `json:"vethPrefix"`
	PodMTU                  int               `json:"podMtu"`
	ManageUntaggedENI       bool              `json:"manageUntaggedEni"`
	AdditionalENITags       map[string]string `json:"additionalEniTags,omitempty"`
	DisableLeakedENICleanup bool              `json:"disableLeakedEniCleanup"`
	DisableProvisioning     bool              `json:"disableNetworkResourceProvisioning"`
	IMDSOnly                bool              `json:"imdsOnlyMode"`
	DisablePodV6            bool              `json:"disablePodV6"`
	BandwidthPlugin         bool              `json:"bandwidthPlugin"`
	// NetworkPolicyMode: standard or strict calls the policy agent; "" off.
	NetworkPolicyMode string `json:"networkPolicyMode,omitempty"`

	// Profiles: the network profiles, by name (profiles.go).
	Profiles []Profile `json:"profiles,omitempty"`
	// ProfileAdmission: a cluster admission policy decides which namespace
	// may pick which profile (profiletrust.go).
	ProfileAdmission bool `json:"profileAdmission"`

	Values []Value `json:"values"` // every knob, in a stable order
}

// Value returns the named knob's value (zero if unknown).
func (e Effective) Value(name string) Value {
	for _, v := range e.Values {
		if v.Name == name {
			return v
		}
	}
	return Value{}
}

// Source returns where the named knob's value came from.
func (e Effective) Source(name string) Source { return e.Value(name).Source }

// Lookup reads one environment variable; os.LookupEnv fits.
type Lookup func(string) (string, bool)

// Inputs are the layers under the store's overrides: the process
// environment and the configuration file. Either may be nil.
type Inputs struct {
	Env  Lookup
	File *File
	// Names lists the environment's variable names (os.Environ's), so the
	// profiles it configures are found; nil: only the file's are.
	Names func() []string
}

// Merged is Lookup as a plain lookup: the environment, else the file.
func (in Inputs) Merged() Lookup {
	return func(name string) (string, bool) {
		t, _, ok := in.Lookup(name)
		return t, ok
	}
}

// Lookup finds a knob in the environment, else the file. Empty text is unset.
func (in Inputs) Lookup(name string) (text string, v Value, ok bool) {
	if in.Env != nil {
		if t, ok := in.Env(name); ok && strings.TrimSpace(t) != "" {
			t = strings.TrimSpace(t)
			return t, Value{Name: name, Value: t, Source: FromEnv}, true
		}
	}
	if t, where, ok := in.File.lookup(name); ok && t != "" {
		return t, Value{Name: name, Value: t, Source: FromFile, Where: where}, true
	}
	return "", Value{Name: name, Source: FromDefault}, false
}

type resolver struct {
	in     Inputs
	stored Overrides
	values []Value
}

// Resolve computes the effective configuration.
func Resolve(stored Overrides, in Inputs) (Effective, error) {
	r := &resolver{in: in, stored: stored}
	var e Effective
	err := r.poolKnobs(&e)
	if err == nil {
		e.SubnetDiscovery, err = r.discovery()
	}
	if err == nil {
		err = r.others(&e)
	}
	if err == nil {
		err = r.profiles(&e)
	}
	if err != nil {
		return Effective{}, err
	}
	// The rules between knobs are the policy's; say where each came from.
	if err := e.Pool.Validate(); err != nil {
		return Effective{}, fmt.Errorf("%w (%s from %s, %s from %s)", err,
			ReleaseDelay, r.origin(ReleaseDelay), Cooldown, r.origin(Cooldown))
	}
	e.ClusterName = r.text(ClusterName)
	if err := r.shown(); err != nil {
		return Effective{}, err
	}
	slices.SortStableFunc(r.values, func(a, b Value) int { return strings.Compare(a.Name, b.Name) })
	e.Values = r.values
	return e, nil
}

// poolKnobs resolves every knob of a generic kind (the pool's targets,
// limits, MTU and timings among them), then the release delay.
func (r *resolver) poolKnobs(e *Effective) error {
	if err := r.generic(e); err != nil {
		return err
	}
	// The policy's default, stretched for a long cooldown so that it
	// always outlasts it.
	def := max(knob(ReleaseDelay).durationDefault(), e.Pool.Cooldown+time.Minute)
	var err error
	e.Pool.ReleaseDelay, err = r.seconds(ReleaseDelay, def)
	return err
}

// others resolves the knobs outside the pool's targets into e.
func (r *resolver) others(e *Effective) error {
	for _, resolve := range []func(*Effective) error{r.awsNodeKnobs, r.networkPolicy, r.families, r.appliedElsewhere} {
		if err := resolve(e); err != nil {
			return err
		}
	}
	return nil
}

// appliedElsewhere checks the knobs other code reads (the node rules, the
// EC2 budget), so a bad one fails every command and verb that resolves the
// configuration, dry runs included, and not only the step that applies it.
func (r *resolver) appliedElsewhere(*Effective) error {
	if _, err := NodeNetwork(r.in); err != nil {
		return err
	}
	_, _, err := EC2Budgets(r.in)
	return err
}

func (r *resolver) origin(name string) string {
	for _, v := range r.values {
		if v.Name == name {
			return v.Origin()
		}
	}
	return string(FromDefault)
}

// raw finds a knob's text and origin, honouring the precedence.
func (r *resolver) raw(name string) (string, Value, bool) {
	if v := r.stored.get(name); v != nil {
		t := strconv.Itoa(*v)
		return t, Value{Name: name, Value: t, Source: FromStore}, true
	}
	return r.in.Lookup(name)
}

// note records the value as normalised text, so that "03" in the
// environment and "3" in the file compare equal.
func (r *resolver) note(v Value, text string) {
	v.Value = text
	r.values = append(r.values, v)
}

func bad(v Value, text, why string) error {
	return fmt.Errorf("%s=%q (%s): %s", v.Name, text, v.Origin(), why)
}

func (r *resolver) integer(name string, def, min, max int) (int, error) {
	if err := r.shadowed(name, min, max); err != nil {
		return 0, err
	}
	text, v, ok := r.raw(name)
	if !ok {
		r.note(v, strconv.Itoa(def))
		return def, nil
	}
	n, why := intIn(text, min, max)
	if why != "" {
		return 0, bad(v, text, why)
	}
	r.note(v, strconv.Itoa(n))
	return n, nil
}

// shadowed checks the value a store override hides (environment, else
// file): the override keeps it from the pool, not from the operator, and
// clearing the override would bring it back; so a bad one is an error on
// every path, as without the override.
func (r *resolver) shadowed(name string, min, max int) error {
	over := r.stored.get(name)
	if over == nil {
		return nil
	}
	text, v, ok := r.in.Lookup(name)
	if !ok {
		return nil
	}
	if _, why := intIn(text, min, max); why != "" {
		return bad(v, text, fmt.Sprintf("%s (the override %d from vpcctl pool warm hides it only until pool warm --reset)", why, *over))
	}
	return nil
}

// intIn parses an integer knob; why is "" or says what is wrong.
func intIn(text string, min, max int) (n int, why string) {
	n, err := strconv.Atoi(text)
	if err != nil {
		return 0, "not an integer"
	}
	if n < min || n > max {
		return 0, fmt.Sprintf("out of range, must be %d..%d", min, max)
	}
	return n, ""
}

func (r *resolver) boolean(name string, def bool) (bool, error) {
	text, v, ok := r.raw(name)
	if !ok {
		r.note(v, strconv.FormatBool(def))
		return def, nil
	}
	b, err := strconv.ParseBool(text)
	if err != nil {
		return false, bad(v, text, "not a boolean (true or false)")
	}
	r.note(v, strconv.FormatBool(b))
	return b, nil
}

// seconds accepts a plain number of seconds (as the reference) or a Go duration.
func (r *resolver) seconds(name string, def time.Duration) (time.Duration, error) {
	text, v, ok := r.raw(name)
	if !ok {
		r.note(v, def.String())
		return def, nil
	}
	d, err := parseSeconds(text)
	if err != nil {
		return 0, bad(v, text, err.Error())
	}
	r.note(v, d.String())
	return d, nil
}

func parseSeconds(text string) (time.Duration, error) {
	if n, err := strconv.Atoi(text); err == nil {
		if n < 0 {
			return 0, fmt.Errorf("must not be negative")
		}
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(text)
	if err != nil {
		return 0, fmt.Errorf("not a number of seconds or a duration like 30s")
	}
	if d < 0 {
		return 0, fmt.Errorf("must not be negative")
	}
	return d, nil
}

func (r *resolver) text(name string) string {
	text, v, ok := r.raw(name)
	r.note(v, text)
	if !ok {
		return ""
	}
	return text
}
