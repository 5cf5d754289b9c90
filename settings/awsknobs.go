package settings

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
)

// aws-node's knobs that vpc-cni carries with the same names and meanings
// (amazon-vpc-cni-k8s; see AWSNodeVars).
const (
	// ExternalServiceCIDRs: IPv4 CIDRs pods reach through the main table
	// (rule "to <cidr> lookup main" at priority 1535).
	ExternalServiceCIDRs = "AWS_EXTERNAL_SERVICE_CIDRS"
	// VethPrefix starts every host-side veth name.
	VethPrefix = "AWS_VPC_K8S_CNI_VETHPREFIX"
	// PodMTU is the MTU of pods' interfaces (default: AWS_VPC_ENI_MTU).
	PodMTU = "POD_MTU"
	// ManageUntaggedENI: false leaves alone attached ENIs vpc-cni did not
	// create and nobody tagged.
	ManageUntaggedENI = "MANAGE_UNTAGGED_ENI"
	// AdditionalENITags: a JSON object of tags for vpc-cni's ENIs.
	AdditionalENITags = "ADDITIONAL_ENI_TAGS"
	// DisableLeakedENICleanup turns off the sweep of leaked ENIs.
	DisableLeakedENICleanup = "DISABLE_LEAKED_ENI_CLEANUP"
	// DisableProvisioning: no mutating EC2 call; pods use what is attached.
	DisableProvisioning = "DISABLE_NETWORK_RESOURCE_PROVISIONING"
	// IMDSOnlyMode: no EC2 call at all (implies DisableProvisioning).
	IMDSOnlyMode = "ENABLE_IMDS_ONLY_MODE"
	// DisablePodV6: the conflist turns IPv6 off inside pods (tuning plugin).
	DisablePodV6 = "DISABLE_POD_V6"
	// BandwidthPlugin: the conflist chains the bandwidth plugin.
	BandwidthPlugin = "ENABLE_BANDWIDTH_PLUGIN"
)

// DefaultVethPrefix is aws-node's default host veth prefix.
const DefaultVethPrefix = "eni"

// reservedTagPart marks the tags vpc-cni itself writes: ADDITIONAL_ENI_TAGS
// may not set them (aws-node drops them; here they are refused).
const reservedTagPart = "k8s.amazonaws.com"

// awsNodeKnobs resolves aws-node's carried knobs of no generic kind into e
// (after e.MTU).
func (r *resolver) awsNodeKnobs(e *Effective) (err error) {
	if e.ExternalServiceCIDRs, err = r.cidrs(ExternalServiceCIDRs); err != nil {
		return err
	}
	if e.VethPrefix, err = r.vethPrefix(); err != nil {
		return err
	}
	pod := knob(PodMTU)
	if e.PodMTU, err = r.integer(PodMTU, e.MTU, pod.Min, pod.Max); err != nil {
		return err
	}
	e.AdditionalENITags, err = r.tags(AdditionalENITags)
	return err
}

// Provisioning reports whether vpc-cni may make mutating EC2 calls: not with
// DISABLE_NETWORK_RESOURCE_PROVISIONING, nor in IMDS-only mode.
func (e Effective) Provisioning() bool { return !e.DisableProvisioning && !e.IMDSOnly }

// LeakSweep reports whether the leaked-ENI sweep runs: it deletes ENIs, so
// not when provisioning is off either (as aws-node forces it off).
func (e Effective) LeakSweep() bool { return !e.DisableLeakedENICleanup && e.Provisioning() }

// cidrs reads a comma list of IPv4 CIDRs; empty entries are skipped, a bad
// one is an error naming it (aws-node skips it silently).
func (r *resolver) cidrs(name string) ([]netip.Prefix, error) {
	text, v, ok := r.raw(name)
	if !ok {
		r.note(v, "")
		return nil, nil
	}
	var out []netip.Prefix
	var norm []string
	for _, s := range strings.Split(text, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil || !p.Addr().Is4() {
			return nil, bad(v, text, fmt.Sprintf("%q is not an IPv4 CIDR such as 10.100.0.0/16", s))
		}
		out = append(out, p.Masked())
		norm = append(norm, p.Masked().String())
	}
	r.note(v, strings.Join(norm, ","))
	return out, nil
}

// vethPrefix reads AWS_VPC_K8S_CNI_VETHPREFIX with aws-node's rules (at most
// 4 characters, not eth, lo or vlan), and only characters an interface
// name may carry.
func (r *resolver) vethPrefix() (string, error) {
	text, v, ok := r.raw(VethPrefix)
	if !ok {
		r.note(v, DefaultVethPrefix)
		return DefaultVethPrefix, nil
	}
	switch {
	case len(text) > 4:
		return "", bad(v, text, "at most 4 characters (the host veth is the prefix and 11 hex digits, 15 at most)")
	case text == "eth" || text == "lo" || text == "vlan":
		return "", bad(v, text, "eth, lo and vlan name the node's own interfaces")
	}
	for _, c := range text {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return "", bad(v, text, fmt.Sprintf("%q cannot be in an interface name (letters, digits, - _ .)", c))
		}
	}
	r.note(v, text)
	return text, nil
}

// tags reads a JSON object of string tags, as aws-node does, but a bad one
// is an error rather than a warning; keys vpc-cni writes itself are refused.
func (r *resolver) tags(name string) (map[string]string, error) {
	text, v, ok := r.raw(name)
	if !ok {
		r.note(v, "{}")
		return map[string]string{}, nil
	}
	m := map[string]string{}
	if err := json.Unmarshal([]byte(text), &m); err != nil {
		return nil, bad(v, text, `not a JSON object of strings such as {"team":"net"}`)
	}
	for k, val := range m {
		switch {
		case strings.Contains(k, reservedTagPart):
			return nil, bad(v, text, fmt.Sprintf("tag %q: keys containing %s are vpc-cni's own", k, reservedTagPart))
		case k == "" || strings.HasPrefix(strings.ToLower(k), "aws:"):
			return nil, bad(v, text, fmt.Sprintf("tag %q: EC2 refuses empty keys and keys starting aws:", k))
		case len(k) > 128 || len(val) > 256:
			return nil, bad(v, text, fmt.Sprintf("tag %q: EC2 allows keys of 128 and values of 256 characters", k))
		}
	}
	b, _ := json.Marshal(m) // sorted keys: the same tags compare equal
	r.note(v, string(b))
	return m, nil
}

// VethPrefixOf resolves AWS_VPC_K8S_CNI_VETHPREFIX as every process does:
// the plugin names pods' host veths with it, and gc, doctor, rebuild and
// migrate find them by it. An error is any bad knob of in.
func VethPrefixOf(in Inputs) (string, error) {
	e, err := Resolve(Overrides{}, in)
	return e.VethPrefix, err
}
