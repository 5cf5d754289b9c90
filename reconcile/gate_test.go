package reconcile

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"vpc-cni/settings"
)

// gateModes are the modes that forbid EC2 mutations, each as the pass
// sees it once prepared.
var gateModes = []struct {
	name string
	cfg  settings.Effective
	opts Options
}{
	{"provisioning disabled", settings.Effective{DisableProvisioning: true}, Options{}},
	{"IMDS-only", settings.Effective{IMDSOnly: true}, Options{}},
	{"dry run", settings.Effective{}, Options{DryRun: true}},
}

// gatedPass is a pass on a provisioned emulated node, gated as prepare
// gates it, with the emulator's counters reset.
func gatedPass(t *testing.T, n *node, cfg settings.Effective, opts Options) *pass {
	p := &pass{Runner: n.r, opts: opts, cfg: cfg, rep: &Report{}}
	p.gate()
	n.sim.ResetCounters()
	return p
}

// The gate refuses the IPv6 mutations itself, whatever planIPv6 decides:
// with a mode that forbids mutations, no AssignIpv6Addresses or
// UnassignIpv6Addresses reaches the emulator.
func TestGatedWriterRefusesIPv6Calls(t *testing.T) {
	n := newNode(t, "t3.small", v6OnlyEnv())
	n.pass() // learns the node, assigns the primary ENI's /80
	eni, v6 := n.primary()
	for _, m := range gateModes {
		t.Run(m.name, func(t *testing.T) {
			p := gatedPass(t, n, m.cfg, m.opts)
			if _, err := p.Cloud.AssignIPv6Prefix(ctxFor(t), eni); err == nil || !strings.Contains(err.Error(), "not called") {
				t.Errorf("AssignIPv6Prefix: %v, want a refusal", err)
			}
			if err := p.Cloud.UnassignIPv6(ctxFor(t), eni, nil, v6); err == nil || !strings.Contains(err.Error(), "not called") {
				t.Errorf("UnassignIPv6: %v, want a refusal", err)
			}
			if c := n.sim.Counters(); c["AssignIpv6Addresses"]+c["UnassignIpv6Addresses"] != 0 {
				t.Errorf("the gate let IPv6 mutations through to EC2: %v", c)
			}
		})
	}
	if _, now := n.primary(); len(now) != len(v6) {
		t.Errorf("the primary ENI's /80s went from %v to %v", v6, now)
	}
}

// Every EC2Writer method, called through a gated pass's Cloud with zero
// arguments, is refused without a request: the list comes from the
// interface, so a method added later is covered here without an edit.
func TestGatedWriterRefusesEveryMutation(t *testing.T) {
	n := newNode(t, "t3.small", nil)
	n.pass()
	writer := reflect.TypeFor[EC2Writer]()
	for _, m := range gateModes {
		t.Run(m.name, func(t *testing.T) {
			p := gatedPass(t, n, m.cfg, m.opts)
			cl := reflect.ValueOf(p.Cloud)
			for i := range writer.NumMethod() {
				name := writer.Method(i).Name
				if err := callZero(t, cl.MethodByName(name)); err == nil || !strings.Contains(err.Error(), "not called") {
					t.Errorf("%s: %v, want a refusal", name, err)
				}
			}
			if all, _, names := ec2CallCount(n.sim); all != 0 {
				t.Errorf("%d EC2 calls through the gate: %v", all, names)
			}
		})
	}
}

// The gate answers only what the mode forbids: IMDS always, EC2 reads
// unless IMDS-only.
func TestGateLetsReadsThrough(t *testing.T) {
	n := newNode(t, "t3.small", nil)
	n.pass()
	eni, _ := n.primary()
	for _, m := range gateModes {
		t.Run(m.name, func(t *testing.T) {
			p := gatedPass(t, n, m.cfg, m.opts)
			if _, err := p.Cloud.Identity(ctxFor(t)); err != nil {
				t.Errorf("Identity (IMDS) refused: %v", err)
			}
			_, err := p.Cloud.ENIByID(ctxFor(t), eni)
			if refused := err != nil && strings.Contains(err.Error(), "not called"); refused != m.cfg.IMDSOnly {
				t.Errorf("ENIByID: %v (IMDS-only %v)", err, m.cfg.IMDSOnly)
			}
			if c := n.sim.Counters()["DescribeNetworkInterfaces"]; (c == 0) != m.cfg.IMDSOnly {
				t.Errorf("DescribeNetworkInterfaces called %d times (IMDS-only %v)", c, m.cfg.IMDSOnly)
			}
		})
	}
}

// callZero calls fn with a live context and zero values for the rest, and
// returns its last result as an error.
func callZero(t *testing.T, fn reflect.Value) error {
	t.Helper()
	in := make([]reflect.Value, fn.Type().NumIn())
	for i := range in {
		in[i] = reflect.Zero(fn.Type().In(i))
	}
	in[0] = reflect.ValueOf(context.Context(ctxFor(t)))
	out := fn.Call(in)
	err, _ := out[len(out)-1].Interface().(error)
	return err
}
