package settings

import (
	"fmt"
	"strings"
)

// NetworkPolicyMode turns on the calls to the reference's network policy
// agent (aws/aws-network-policy-agent): standard or strict, as aws-node's
// knob; unset, policy is off and the agent is never called.
const NetworkPolicyMode = "NETWORK_POLICY_ENFORCING_MODE"

// The agent's two modes (it refuses any other, aws-node's none included).
const (
	PolicyStandard = "standard"
	PolicyStrict   = "strict"
)

// networkPolicy resolves NETWORK_POLICY_ENFORCING_MODE into e (after
// e.VethPrefix): the agent finds a pod's host veth by the reference's
// name, so another prefix is refused with the mode on.
func (r *resolver) networkPolicy(e *Effective) error {
	text, v, ok := r.raw(NetworkPolicyMode)
	if !ok {
		r.note(v, "")
		return nil
	}
	mode := strings.ToLower(text)
	switch mode {
	case PolicyStandard, PolicyStrict:
	case "none":
		return bad(v, text, "the policy agent refuses none (aws-node passes it on, and every ADD then fails); "+
			"leave it unset to turn policy off, or set standard or strict")
	default:
		return bad(v, text, "must be "+orList(knob(NetworkPolicyMode).Allowed)+" (unset: no network policy)")
	}
	if e.VethPrefix != DefaultVethPrefix {
		return bad(v, text, fmt.Sprintf("the policy agent finds pods' host veths by the prefix %q only, and %s is %q (%s)",
			DefaultVethPrefix, VethPrefix, e.VethPrefix, r.origin(VethPrefix)))
	}
	r.note(v, mode)
	e.NetworkPolicyMode = mode
	return nil
}
