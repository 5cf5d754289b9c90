package settings

import (
	"strings"
	"testing"
)

// The mode is off unless set; standard and strict are taken in any case,
// from the environment or the file, with their source.
func TestNetworkPolicyModeIsOffUnlessSet(t *testing.T) {
	e, err := Resolve(Overrides{}, Inputs{})
	if err != nil || e.NetworkPolicyMode != "" || e.Source(NetworkPolicyMode) != FromDefault {
		t.Fatalf("default: %q from %s: %v", e.NetworkPolicyMode, e.Source(NetworkPolicyMode), err)
	}
	e, err = Resolve(Overrides{}, Inputs{File: fileOf(t, "NETWORK_POLICY_ENFORCING_MODE=Strict\n")})
	if err != nil || e.NetworkPolicyMode != PolicyStrict || e.Value(NetworkPolicyMode).Where != "/etc/vpc-cni/config:1" {
		t.Fatalf("file: %q %+v: %v", e.NetworkPolicyMode, e.Value(NetworkPolicyMode), err)
	}
	env := func(k string) (string, bool) { return "standard", k == NetworkPolicyMode }
	e, err = Resolve(Overrides{}, Inputs{Env: env, File: fileOf(t, "NETWORK_POLICY_ENFORCING_MODE=strict\n")})
	if err != nil || e.NetworkPolicyMode != PolicyStandard || e.Source(NetworkPolicyMode) != FromEnv {
		t.Fatalf("env over file: %q from %s: %v", e.NetworkPolicyMode, e.Source(NetworkPolicyMode), err)
	}
}

// none (which the agent refuses), any other word, and a veth prefix the
// agent cannot find are errors naming the knob and where it was set.
func TestNetworkPolicyModeRefusesWhatTheAgentCannotUse(t *testing.T) {
	cases := map[string][]string{
		"NETWORK_POLICY_ENFORCING_MODE=none\n":                                    {"refuses none", "leave it unset", "/etc/vpc-cni/config:1"},
		"NETWORK_POLICY_ENFORCING_MODE=enforce\n":                                 {"must be standard or strict", "\"enforce\""},
		"AWS_VPC_K8S_CNI_VETHPREFIX=cali\nNETWORK_POLICY_ENFORCING_MODE=strict\n": {"prefix \"eni\" only", "\"cali\"", "config:1"},
	}
	for text, wants := range cases {
		_, err := Resolve(Overrides{}, Inputs{File: fileOf(t, text)})
		if err == nil || !strings.Contains(err.Error(), NetworkPolicyMode) {
			t.Errorf("%q: err = %v", text, err)
			continue
		}
		for _, w := range wants {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: %v lacks %q", text, err, w)
			}
		}
	}
	if _, err := Resolve(Overrides{}, Inputs{File: fileOf(t, "AWS_VPC_K8S_CNI_VETHPREFIX=cali\n")}); err != nil {
		t.Errorf("another prefix with policy off: %v", err)
	}
}
