// Package settings resolves the operator's configuration: each knob from the
// flag of this invocation, else the override persisted by `vpcctl pool warm`,
// else the environment, else the default. A bad value is an error that names
// the variable; it is never replaced by a default.
package settings

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"vpc-cni/pool"
)

// Source says where an effective value came from.
type Source string

const (
	FromFlag    Source = "flag"
	FromStore   Source = "store"
	FromEnv     Source = "env"
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
	Cooldown         = "IP_COOLDOWN_PERIOD"
	ReleaseDelay     = "RELEASE_DELAY"
	ClusterName      = "CLUSTER_NAME"
	ENIMTU           = "AWS_VPC_ENI_MTU"
)

// Overrides are the targets an operator can pin with `vpcctl pool warm` (and
// the flags of one invocation). Nil means "not set here".
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

// Value is one knob's effective value and where it came from.
type Value struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Source Source `json:"source"`
}

// Effective is the resolved configuration.
type Effective struct {
	Pool        pool.Config `json:"pool"`
	ClusterName string      `json:"clusterName"`
	MTU         int         `json:"mtu"`
	Values      []Value     `json:"values"` // every knob, in a stable order
}

// Source returns where the named knob's value came from.
func (e Effective) Source(name string) Source {
	for _, v := range e.Values {
		if v.Name == name {
			return v.Source
		}
	}
	return ""
}

// Lookup reads one environment variable; os.LookupEnv fits.
type Lookup func(string) (string, bool)

type resolver struct {
	env           Lookup
	stored, flags Overrides
	values        []Value
}

// Resolve computes the effective configuration.
func Resolve(env Lookup, stored, flags Overrides) (Effective, error) {
	r := &resolver{env: env, stored: stored, flags: flags}
	var e Effective
	var err error
	set := func(dst *int, name string, def int, min, max int) {
		if err == nil {
			*dst, err = r.integer(name, def, min, max)
		}
	}
	set(&e.Pool.WarmENITarget, WarmENITarget, pool.DefaultWarmENITarget, 0, 100)
	set(&e.Pool.WarmIPTarget, WarmIPTarget, 0, 0, 100000)
	set(&e.Pool.MinIPTarget, MinIPTarget, 0, 0, 100000)
	set(&e.Pool.WarmPrefixTarget, WarmPrefixTarget, 0, 0, 10000)
	set(&e.Pool.MaxENI, MaxENI, 0, 0, 100)
	set(&e.Pool.MaxPods, MaxPods, 0, 0, 100000)
	set(&e.MTU, ENIMTU, 9001, 576, 9001)
	if err == nil {
		e.Pool.PrefixDelegation, err = r.boolean(PrefixDelegation, false)
	}
	if err == nil {
		e.Pool.Cooldown, err = r.seconds(Cooldown, pool.DefaultCooldown)
	}
	if err == nil {
		// The policy's default, stretched for a long cooldown so that it
		// always outlasts it.
		def := max(pool.DefaultReleaseDelay, e.Pool.Cooldown+time.Minute)
		e.Pool.ReleaseDelay, err = r.seconds(ReleaseDelay, def)
	}
	if err == nil {
		err = r.adaptive(&e)
	}
	if err != nil {
		return Effective{}, err
	}
	if e.Pool.ReleaseDelay <= e.Pool.Cooldown {
		return Effective{}, fmt.Errorf("%s (%s) must be longer than %s (%s), so released addresses have finished cooling",
			ReleaseDelay, e.Pool.ReleaseDelay, Cooldown, e.Pool.Cooldown)
	}
	e.ClusterName = r.text(ClusterName)
	sort.SliceStable(r.values, func(i, j int) bool { return r.values[i].Name < r.values[j].Name })
	e.Values = r.values
	return e, nil
}

// raw finds a knob's text and source, honouring the precedence.
func (r *resolver) raw(name string) (string, Source, bool) {
	if v := r.flags.get(name); v != nil {
		return strconv.Itoa(*v), FromFlag, true
	}
	if v := r.stored.get(name); v != nil {
		return strconv.Itoa(*v), FromStore, true
	}
	if r.env != nil {
		if v, ok := r.env(name); ok && strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v), FromEnv, true
		}
	}
	return "", FromDefault, false
}

func (r *resolver) note(name, value string, src Source) {
	r.values = append(r.values, Value{Name: name, Value: value, Source: src})
}

func (r *resolver) integer(name string, def, min, max int) (int, error) {
	text, src, ok := r.raw(name)
	if !ok {
		r.note(name, strconv.Itoa(def), FromDefault)
		return def, nil
	}
	n, err := strconv.Atoi(text)
	if err != nil {
		return 0, fmt.Errorf("%s=%q (%s): not an integer", name, text, src)
	}
	if n < min || n > max {
		return 0, fmt.Errorf("%s=%d (%s): out of range, must be %d..%d", name, n, src, min, max)
	}
	r.note(name, text, src)
	return n, nil
}

func (r *resolver) boolean(name string, def bool) (bool, error) {
	text, src, ok := r.raw(name)
	if !ok {
		r.note(name, strconv.FormatBool(def), FromDefault)
		return def, nil
	}
	b, err := strconv.ParseBool(text)
	if err != nil {
		return false, fmt.Errorf("%s=%q (%s): not a boolean (true or false)", name, text, src)
	}
	r.note(name, strconv.FormatBool(b), src)
	return b, nil
}

// seconds accepts a plain number of seconds (as the reference) or a Go duration.
func (r *resolver) seconds(name string, def time.Duration) (time.Duration, error) {
	text, src, ok := r.raw(name)
	if !ok {
		r.note(name, def.String(), FromDefault)
		return def, nil
	}
	d, err := parseSeconds(text)
	if err != nil {
		return 0, fmt.Errorf("%s=%q (%s): %v", name, text, src, err)
	}
	r.note(name, d.String(), src)
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
	v, src, ok := r.raw(name)
	if !ok {
		r.note(name, "", FromDefault)
		return ""
	}
	r.note(name, v, src)
	return v
}
