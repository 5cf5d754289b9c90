package reconcile

import (
	"strings"
	"testing"

	"vpc-cni/cloud"
	"vpc-cni/hostnet"
	"vpc-cni/pool"
	"vpc-cni/settings"
)

// rulesHost is a readyHost whose namespace has the primary link, and which
// records the node rules a pass asks for.
type rulesHost struct {
	readyHost
	got *[]hostnet.Config
}

func (rulesHost) PrimaryLink(string) (string, error) { return "eth0", nil }

func (h rulesHost) EnsureNodeRules(c hostnet.Config) ([]string, error) {
	*h.got = append(*h.got, c)
	return nil, nil
}

// ENABLE_V6_EGRESS: the node rules SNAT v6if0's range to the primary ENI's
// IPv6, read from IMDS by the pass; without one the step fails naming the
// knob and the ENI, and sets nothing. Without the knob no ipv6s is read.
func TestV6EgressNodeRulesUseThePrimaryENIsIPv6(t *testing.T) {
	n := newNode(t, "m5.large", env{settings.EnableV6Egress: "true"})
	var got []hostnet.Config
	n.r.Host = rulesHost{got: &got}
	rep, _ := n.r.Run(ctxFor(t), Options{})
	want := "ENABLE_V6_EGRESS needs an IPv6 address on the primary ENI"
	if !strings.Contains(strings.Join(rep.Failed, "\n"), want) || len(got) != 0 {
		t.Fatalf("no IPv6 on the primary ENI: failed %q, rules set %+v; want the step failed with %q", rep.Failed, got, want)
	}
	primary, _ := n.primary()
	a, err := sdk(t).AssignIPv6(ctxFor(t), primary, cloud.IPv6Request{AddressCount: 1})
	if err != nil {
		t.Fatal(err)
	}
	if rep = n.pass(); len(rep.Failed) != 0 || len(got) != 1 {
		t.Fatalf("with an IPv6: failed %v, %d rule sets", rep.Failed, len(got))
	}
	if c := got[0]; c.V6EgressRange != pool.EgressV6Range || c.PrimaryIPv6 != a.Addresses[0] || c.V4EgressRange.IsValid() {
		t.Fatalf("rules %+v; want %s SNATed to %s", c, pool.EgressV6Range, a.Addresses[0])
	}
	if node := n.nodeRecord(); node.PrimaryIPv6 != a.Addresses[0] {
		t.Fatalf("store holds the node's IPv6 %s; want %s (status expects the same rules)", node.PrimaryIPv6, a.Addresses[0])
	}
	delete(n.env, settings.EnableV6Egress)
	got = nil
	n.sim.ResetCounters()
	before := n.sim.Counters()["IMDS"]
	n.pass()
	plain := n.sim.Counters()["IMDS"] - before
	n.env[settings.EnableV6Egress] = "true"
	n.pass()
	if withKnob := n.sim.Counters()["IMDS"] - before - plain; withKnob != plain+1 || got[0].V6EgressRange.IsValid() {
		t.Fatalf("IMDS reads per pass: %d without ENABLE_V6_EGRESS, %d with; want one more with it (rules off: %+v)",
			plain, withKnob, got[0])
	}
}
