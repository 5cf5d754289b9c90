package commands

import (
	"testing"
)

// doctor: healthy after a reconcile (exit 0); a dir without state or an exhausted
// subnet is named, with what to do (exit 1).
func TestDoctor(t *testing.T) {
	sim, env := newSim(t, "t3.small")
	dir := t.TempDir()
	vpc(t, env, "--state-dir", t.TempDir(), "doctor").want(t, 1, "no state in", "run `vpcctl reconcile` first")
	vpc(t, env, "--state-dir", dir, "reconcile").want(t, 0)
	vpc(t, env, "--state-dir", dir, "doctor").want(t, 0, "state file", "is consistent", "EC2 intents")

	sim.SetSubnetFree(0)
	vpc(t, with(env, "WARM_IP_TARGET=5"), "--state-dir", dir, "reconcile").want(t, 1)
	vpc(t, with(env, "WARM_IP_TARGET=5"), "--state-dir", dir, "doctor").want(t, 1, "growth", "blocked")
}
