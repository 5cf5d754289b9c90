package settings

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"vpc-cni/pool"
)

// Network profiles: a pod annotated vpc-cni.io/profile: <name>
// gets its address from an ENI of that profile, created with the profile's
// security groups in its subnets. **contract**: a profile is configured with
// PROFILE_<NAME>_<FIELD> keys, <NAME> the name upper-cased with '-' as '_'.
const (
	ProfilePrefix = "PROFILE_"
	// Profiles (PROFILES) lists the profiles this node serves; unset, every
	// profile configured. A pod may pick only a profile the node serves.
	Profiles = "PROFILES"
	// ProfileAnnotation is the pod annotation that picks a profile.
	ProfileAnnotation = "vpc-cni.io/profile"
	// ProfileTag marks the ENIs of a profile (its value is the name).
	ProfileTag = "vpc-cni.io/profile"
)

// The fields of a profile: the suffixes of its keys.
const (
	ProfileSecurityGroups   = "SECURITY_GROUPS"
	ProfileSubnets          = "SUBNETS"
	ProfileSNAT             = "SNAT"
	ProfileWarmIPTarget     = "WARM_IP_TARGET"
	ProfileMinIPTarget      = "MINIMUM_IP_TARGET"
	ProfileWarmENITarget    = "WARM_ENI_TARGET"
	ProfileWarmPrefixTarget = "WARM_PREFIX_TARGET"
)

// ProfileFields lists every field (the registry's PerProfile and
// ProfileOnly knobs), the longest first so a key's suffix is matched whole
// (WARM_IP_TARGET before a shorter one could take its end).
var ProfileFields = profileFields()

// SNAT modes of a profile.
const (
	SNATNode = "node" // traffic leaving the VPC is SNATed to the node's primary address, as the default pool's
	SNATNone = "none" // the pod's own address is kept for every destination
)

// Profile is one network profile as the node resolves it.
type Profile struct {
	Name pool.Pool `json:"name"`
	// SecurityGroups: the group IDs its ENIs get, and GroupTags the tag
	// selectors (every group of the node's VPC with that tag, resolved
	// through EC2 by the pass that needs them); both empty: the primary
	// ENI's (as the default pool's ENIs).
	SecurityGroups []string      `json:"securityGroups,omitempty"`
	GroupTags      []TagSelector `json:"groupTags,omitempty"`
	// Subnets: the subnet IDs its ENIs go to, and SubnetTags the tag
	// selectors (key=value, a subnet of the node's zone with that tag);
	// both empty: the node's subnet.
	Subnets    []string          `json:"subnets,omitempty"`
	SubnetTags map[string]string `json:"subnetTags,omitempty"`
	// ZoneENIConfig: the zone's ENIConfig names the subnet and groups
	// (custom networking), in place of the fields above; Discovery: when
	// subnet discovery may move new ENIs off the node's subnet
	// (ENABLE_SUBNET_DISCOVERY; empty: never). The default pool's home has
	// them; a profile's SUBNETS say where its ENIs go instead.
	ZoneENIConfig bool   `json:"-"`
	Discovery     string `json:"-"`
	SNAT          string `json:"snat"`
	// Allowed: PROFILES is unset or names it; a pod may pick it.
	Allowed bool `json:"allowed"`
	// Namespaces: the namespaces whose pods may pick it; empty: any
	// (profiletrust.go).
	Namespaces []string `json:"namespaces,omitempty"`
	// Pool is the profile pool's configuration: the node's, with the
	// profile's own targets when it sets any, and Profile set.
	Pool pool.Config `json:"-"`
	// OwnTargets: the profile sets a target of its own, so the node's
	// (and the overrides of `vpcctl pool warm`) do not apply to it.
	OwnTargets bool `json:"-"`
}

// TagSelector picks the resources that carry the tag Key=Value.
type TagSelector struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// String is the selector as the configuration writes it.
func (t TagSelector) String() string { return tagPrefix + t.Key + "=" + t.Value }

// GroupsByTag reports whether the profile's groups need EC2 to be known.
func (p Profile) GroupsByTag() bool { return len(p.GroupTags) > 0 }

// Profile returns the named profile of e.
func (e Effective) Profile(name pool.Pool) (Profile, bool) {
	i := slices.IndexFunc(e.Profiles, func(p Profile) bool { return p.Name == name })
	if i < 0 {
		return Profile{}, false
	}
	return e.Profiles[i], true
}

// ProfileKey is the key of a profile's field: PROFILE_<NAME>_<FIELD>.
func ProfileKey[N ~string](name N, field string) string {
	return ProfilePrefix + strings.ToUpper(strings.ReplaceAll(string(name), "-", "_")) + "_" + field
}

// onlyOf reports whether s is not empty and every byte of it is a digit, or
// one of the letters lo..hi, or other. (No package-level regexp: settings is
// on the plugin's start-up path.)
func onlyOf(s string, lo, hi, other byte) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= lo && c <= hi || c == other) {
			return false
		}
	}
	return s != ""
}

// MaxProfileName bounds a profile's name: it is an ENI tag's value and a
// pod annotation's, and an error names it.
const MaxProfileName = 63

// ValidProfileName reports why name is not a profile name ("" when it is).
func ValidProfileName(name string) string {
	switch {
	case name == "":
		return "a profile name is not empty"
	case len(name) > MaxProfileName:
		return fmt.Sprintf("a profile name has at most %d characters", MaxProfileName)
	case !onlyOf(name, 'a', 'z', '-'):
		return "a profile name is lower-case letters, digits and '-' ([a-z0-9-]+)"
	}
	return ""
}

// ParseProfileKey splits PROFILE_<NAME>_<FIELD> into the profile's name and
// the field; an error says what is wrong with key.
func ParseProfileKey(key string) (name, field string, err error) {
	rest, ok := strings.CutPrefix(key, ProfilePrefix)
	if !ok {
		return "", "", fmt.Errorf("%s is not a profile key (%s<NAME>_<FIELD>)", key, ProfilePrefix)
	}
	for _, f := range ProfileFields {
		if n, ok := strings.CutSuffix(rest, "_"+f); ok {
			if !onlyOf(n, 'A', 'Z', '_') {
				return "", "", fmt.Errorf("%s: <NAME> %q is upper-case letters, digits and '_' (for '-')", key, n)
			}
			name = strings.ToLower(strings.ReplaceAll(n, "_", "-"))
			if why := ValidProfileName(name); why != "" {
				return "", "", fmt.Errorf("%s: %s", key, why)
			}
			return name, f, nil
		}
	}
	return "", "", fmt.Errorf("unknown profile key %s; a profile's keys are %s<NAME>_ then one of %s",
		key, ProfilePrefix, strings.Join(ProfileFields, ", "))
}

// profileNames lists the profiles the inputs configure: every name of a
// PROFILE_<NAME>_<FIELD> key with a value, in the file or the environment,
// sorted. A file's bad key was refused when it was parsed; an environment
// variable that names a field with a bad <NAME> is an error, one that names
// no field is not vpc-cni's and is left alone.
func (in Inputs) profileNames() ([]string, error) {
	seen := map[string]bool{}
	for _, k := range in.File.keys() {
		if name, _, err := ParseProfileKey(k); err == nil {
			seen[name] = true
		}
	}
	if in.Names != nil {
		for _, k := range in.Names() {
			if !strings.HasPrefix(k, ProfilePrefix) {
				continue
			}
			if t, ok := in.Env(k); !ok || strings.TrimSpace(t) == "" {
				continue
			}
			name, _, err := ParseProfileKey(k)
			switch {
			case err == nil:
				seen[name] = true
			case !strings.HasPrefix(err.Error(), "unknown profile key"):
				return nil, fmt.Errorf("%v (env)", err)
			}
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, nil
}

// profiles resolves every profile into e (after the pool's knobs, which a
// profile without targets of its own inherits) and PROFILES.
func (r *resolver) profiles(e *Effective) error {
	names, err := r.in.profileNames()
	if err != nil {
		return err
	}
	allowed, err := r.allowedProfiles(names)
	if err != nil {
		return err
	}
	for _, name := range names {
		p, err := r.profile(name, e.Pool)
		if err != nil {
			return err
		}
		p.Allowed = allowed == nil || allowed[name]
		e.Profiles = append(e.Profiles, p)
	}
	return nil
}

// allowedProfiles reads PROFILES: nil when unset (every profile allowed).
func (r *resolver) allowedProfiles(names []string) (map[string]bool, error) {
	text, v, ok := r.in.Lookup(Profiles)
	if !ok {
		r.note(v, "")
		return nil, nil
	}
	out := map[string]bool{}
	var list []string
	for _, n := range splitList(text) {
		if why := ValidProfileName(n); why != "" {
			return nil, bad(v, text, fmt.Sprintf("%q: %s", n, why))
		}
		if !slices.Contains(names, n) {
			return nil, bad(v, text, fmt.Sprintf("profile %q is not configured (no %s keys)", n, ProfileKey(n, "*")))
		}
		out[n] = true
		list = append(list, n)
	}
	r.note(v, strings.Join(list, ","))
	return out, nil
}

func splitList(text string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(text, func(c rune) bool { return c == ',' || c == ' ' || c == '\t' }) {
		out = append(out, strings.TrimSpace(f))
	}
	return out
}

// profile resolves one profile's keys over the node's pool configuration.
func (r *resolver) profile(name string, node pool.Config) (Profile, error) {
	p := Profile{Name: pool.Pool(name), SNAT: SNATNode}
	var err error
	var groups []string
	if groups, err = r.profileList(name, ProfileSecurityGroups, parseGroup); err != nil {
		return p, err
	}
	p.SecurityGroups, p.GroupTags = splitGroups(groups)
	if len(p.SecurityGroups) > MaxProfileGroups {
		text, v, _ := r.in.Lookup(ProfileKey(name, ProfileSecurityGroups))
		return p, bad(v, text, fmt.Sprintf("%d security groups; an ENI has at most %d", len(p.SecurityGroups), MaxProfileGroups))
	}
	var subnets []string
	if subnets, err = r.profileList(name, ProfileSubnets, parseSubnet); err != nil {
		return p, err
	}
	p.Subnets, p.SubnetTags = splitSubnets(subnets)
	if p.SNAT, err = r.profileSNAT(name); err != nil {
		return p, err
	}
	if err = r.profileTrust(&p); err != nil {
		return p, err
	}
	p.OwnTargets = r.ownTargets(name)
	p.Pool, err = r.profilePool(name, node)
	return p, err
}

// profileList reads a comma-separated list field, each item checked by parse.
func (r *resolver) profileList(name, field string, parse func(string) (string, error)) ([]string, error) {
	key := ProfileKey(name, field)
	text, v, ok := r.in.Lookup(key)
	if !ok {
		r.note(v, "")
		return nil, nil
	}
	var out []string
	for _, item := range splitList(text) {
		s, err := parse(item)
		if err != nil {
			return nil, bad(v, text, err.Error())
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, bad(v, text, "an empty list")
	}
	r.note(v, strings.Join(out, ","))
	return out, nil
}

// MaxProfileGroups is EC2's limit of security groups on one ENI.
const MaxProfileGroups = 16

const (
	tagPrefix  = "tag:"
	tagSubnets = "subnets of the node's zone tagged so"
	tagGroups  = "security groups of the node's VPC tagged so"
)

// isID reports whether s is prefix then letters and digits (sg-..., subnet-...).
func isID(s, prefix string) bool {
	rest, ok := strings.CutPrefix(s, prefix)
	return ok && onlyOf(strings.ToLower(rest), 'a', 'z', 'a')
}

// parseGroup accepts a security group ID or a tag selector tag:<key>=<value>.
func parseGroup(s string) (string, error) {
	if strings.HasPrefix(s, tagPrefix) {
		return parseSelector(s, tagGroups)
	}
	if !isID(s, "sg-") {
		return "", fmt.Errorf("%q is neither a security group ID (sg-...) nor a tag selector (tag:<key>=<value>)", s)
	}
	return s, nil
}

// parseSelector checks a tag selector tag:<key>=<value>: a key that is
// not empty (EC2's tag:<key> filter), any value. what says what it picks.
func parseSelector(s, what string) (string, error) {
	k, _, found := strings.Cut(strings.TrimPrefix(s, tagPrefix), "=")
	if !found || strings.TrimSpace(k) == "" {
		return "", fmt.Errorf("%q: a tag selector is tag:<key>=<value> (%s)", s, what)
	}
	return s, nil
}

// splitGroups separates group IDs from tag selectors, in the order given.
func splitGroups(items []string) (ids []string, tags []TagSelector) {
	for _, s := range items {
		sel, ok := strings.CutPrefix(s, tagPrefix)
		if !ok {
			ids = append(ids, s)
			continue
		}
		k, v, _ := strings.Cut(sel, "=")
		tags = append(tags, TagSelector{Key: strings.TrimSpace(k), Value: strings.TrimSpace(v)})
	}
	return ids, tags
}

// parseSubnet accepts a subnet ID or a tag selector tag:<key>=<value>.
func parseSubnet(s string) (string, error) {
	if strings.HasPrefix(s, tagPrefix) {
		return parseSelector(s, tagSubnets)
	}
	if !isID(s, "subnet-") {
		return "", fmt.Errorf("%q is neither a subnet ID (subnet-...) nor a tag selector (tag:<key>=<value>)", s)
	}
	return s, nil
}

// splitSubnets separates subnet IDs from tag selectors.
func splitSubnets(items []string) (ids []string, tags map[string]string) {
	for _, s := range items {
		sel, ok := strings.CutPrefix(s, tagPrefix)
		if !ok {
			ids = append(ids, s)
			continue
		}
		if tags == nil {
			tags = map[string]string{}
		}
		k, v, _ := strings.Cut(sel, "=")
		tags[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return ids, tags
}

func (r *resolver) profileSNAT(name string) (string, error) {
	key := ProfileKey(name, ProfileSNAT)
	text, v, ok := r.in.Lookup(key)
	if !ok {
		r.note(v, SNATNode)
		return SNATNode, nil
	}
	switch strings.ToLower(text) {
	case SNATNode, SNATNone:
		r.note(v, strings.ToLower(text))
		return strings.ToLower(text), nil
	}
	return "", bad(v, text, "must be "+orList(knob(ProfileSNAT).Allowed))
}

// profilePool is the node's pool configuration with the profile's targets
// (the registry's PerProfile knobs): a profile that sets none of them keeps
// the node's; one that sets any has exactly those, the others at their
// defaults.
func (r *resolver) profilePool(name string, node pool.Config) (pool.Config, error) {
	own := r.ownTargets(name)
	e := Effective{Pool: node}
	e.Pool.Profile = pool.Pool(name)
	for _, k := range Registry {
		if k.Scope != PerProfile {
			continue
		}
		key := ProfileKey(name, k.Name)
		if _, v, ok := r.in.Lookup(key); !ok || !own {
			r.note(v, "") // the node's value, or the row's default
			if own {
				k.setDefault(k.field(&e))
			}
			continue
		}
		if err := r.resolveInto(k, key, k.field(&e)); err != nil {
			return e.Pool, err
		}
	}
	return e.Pool, nil
}

// EnvNames lists the process environment's variable names: Inputs.Names
// for a process that reads os.LookupEnv.
func EnvNames() []string {
	env := os.Environ()
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if k, _, ok := strings.Cut(kv, "="); ok {
			out = append(out, k)
		}
	}
	return out
}
