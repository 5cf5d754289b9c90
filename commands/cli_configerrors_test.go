package commands

import (
	"strings"
	"testing"
)

// The node-rule knobs are configuration: a bad one makes reconcile and its
// dry run (on a fresh state and on a learnt one) exit 2 naming the key and
// where it was set, with no EC2 call that changes anything.
func TestBadNodeRuleKnobsExitTwo(t *testing.T) {
	sim, env := newSim(t, "m5.large")
	learnt := t.TempDir()
	good := writeConfig(t, "WARM_IP_TARGET=2\n")
	vpc(t, env, "--config", good, "--state-dir", learnt, "reconcile").want(t, 0)
	for _, kv := range []string{
		"AWS_VPC_K8S_CNI_CONNMARK=0",
		"AWS_VPC_K8S_CNI_RANDOMIZESNAT=foo",
		"AWS_VPC_K8S_CNI_EXCLUDE_SNAT_CIDRS=100.64.0.0/10,10.0.0.0/33",
	} {
		bad := writeConfig(t, "# node\nWARM_IP_TARGET=2\n"+kv+"\n")
		key, _, _ := strings.Cut(kv, "=")
		sim.ResetCounters()
		for _, dir := range []string{learnt, t.TempDir()} {
			for _, args := range [][]string{{"reconcile"}, {"reconcile", "--dry-run"}} {
				a := append([]string{"--config", bad, "--state-dir", dir}, args...)
				vpc(t, env, a...).want(t, 2, key, bad+":3")
			}
		}
		vpc(t, with(env, kv), "--config", good, "--state-dir", learnt, "reconcile").want(t, 2, key, "(env)")
		if m := mutatingCalls(sim); len(m) != 0 {
			t.Errorf("%s: mutating calls %v", kv, m)
		}
	}
}

// A bad value under a `pool warm` override is still an error on every path
// (pool status, dry run, reconcile), naming the key and its line: the
// override hides it only until pool warm --reset.
func TestOverrideDoesNotHideABadFileValue(t *testing.T) {
	sim, env := newSim(t, "m5.large")
	dir := t.TempDir()
	good := writeConfig(t, "WARM_IP_TARGET=2\n")
	vpc(t, env, "--config", good, "--state-dir", dir, "reconcile").want(t, 0)
	vpc(t, env, "--config", good, "--state-dir", dir, "pool", "warm", "--ip-target", "3", "--no-reconcile").want(t, 0)
	bad := writeConfig(t, "# targets\nWARM_IP_TARGET=abc\n")
	sim.ResetCounters()
	for _, args := range [][]string{{"pool", "status"}, {"reconcile", "--dry-run"}, {"reconcile"}} {
		a := append([]string{"--config", bad, "--state-dir", dir}, args...)
		vpc(t, env, a...).want(t, 2, `WARM_IP_TARGET="abc" (file `+bad+":2)")
	}
	if m := mutatingCalls(sim); len(m) != 0 {
		t.Errorf("mutating calls %v", m)
	}
}
