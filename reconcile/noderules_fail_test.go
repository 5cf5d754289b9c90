package reconcile

import (
	"errors"
	"strings"
	"testing"

	"vpc-cni/hostnet"
	"vpc-cni/settings"
)

// brokenRulesHost has the primary link, and every rule it is asked to set
// fails (nftables missing, a netlink refusal).
type brokenRulesHost struct{ readyHost }

func (brokenRulesHost) PrimaryLink(string) (string, error) { return "eth0", nil }

func (brokenRulesHost) EnsureNodeRules(hostnet.Config) ([]string, error) {
	return nil, errors.New("nftables: operation not permitted")
}

// A pass whose node rules failed fails (exit 1 in the CLI), not a
// configuration error, after doing the rest of its work; it says so in the
// report too.
func TestPassWithFailedNodeRulesFails(t *testing.T) {
	n := newNode(t, "m5.large", env{settings.WarmIPTarget: "3"})
	n.r.Host = brokenRulesHost{}
	rep, err := n.r.Run(ctxFor(t), Options{})
	if err == nil || !strings.Contains(err.Error(), "node rules: nftables: operation not permitted") || IsConfigError(err) {
		t.Fatalf("err = %v (config error %v); want the node rules' failure", err, IsConfigError(err))
	}
	if !strings.Contains(strings.Join(rep.Failed, "\n"), "node rules") {
		t.Errorf("failed steps %q; want the node rules", rep.Failed)
	}
	if _, addrs := simHeld(n.sim); addrs != 3 {
		t.Errorf("%d addresses in EC2 after the pass; want the plan's 3 (the rules fail after it)", addrs)
	}
}

// A bad node-rule knob is a configuration error before the pass plans, in
// a dry run too, naming the key; no EC2 call changes anything.
func TestBadNodeRuleKnobIsAConfigErrorBeforeThePass(t *testing.T) {
	for _, kv := range [][2]string{
		{settings.ConnMark, "0"}, {settings.RandomizeSNAT, "foo"}, {settings.ExcludeSNATCIDRs, "100.64.0.0/10,nope"},
	} {
		for _, dry := range []bool{false, true} {
			n := newNode(t, "m5.large", env{kv[0]: kv[1]})
			n.r.Host = rulesHost{got: new([]hostnet.Config)}
			_, err := n.r.Run(ctxFor(t), Options{DryRun: dry})
			if !IsConfigError(err) || !strings.Contains(err.Error(), kv[0]) {
				t.Errorf("%s=%s (dry run %v): err = %v; want a configuration error naming it", kv[0], kv[1], dry, err)
			}
			if _, mutating, names := ec2CallCount(n.sim); mutating != 0 {
				t.Errorf("%s=%s: mutating calls %v", kv[0], kv[1], names)
			}
		}
	}
}
