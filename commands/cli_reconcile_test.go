package commands

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"vpc-cni/internal/testsupport/simtest"
	"vpc-cni/sim/ec2sim"

	"vpc-cni/store"
)

// stateOf is everything the store holds but the rate budget, the counters
// and the record of passes (the last report and the events).
func stateOf(t *testing.T, dir string) string {
	t.Helper()
	st, err := store.Open(dir, store.Options{ReadOnly: true})
	if err != nil {
		return "open: " + err.Error()
	}
	var out string
	err = st.View(func(tx *store.Tx) error {
		node, _, _ := tx.Node()
		snap, _ := tx.Snapshot()
		set, _ := tx.Settings()
		in, _ := tx.Intents()
		as, _ := tx.Assignments()
		out = fmt.Sprintf("%+v\n%+v\n%+v\n%+v\n%+v", node, snap, set, in, as)
		return nil
	})
	if err != nil {
		return "view: " + err.Error()
	}
	return out
}

// A reconcile that cannot reach or may not use EC2 or IMDS exits 1, says
// which and what to do, changes nothing of the node, and leaves a trace:
// status's lastReconcile, doctor's likely cause, an event, the metrics.
func TestReconcileFailuresExit1(t *testing.T) {
	cases := []struct {
		name   string
		fresh  bool // the node has not been learnt yet
		breaks func(t *testing.T, env []string, sim *ec2sim.Sim) []string
		says   []string
		cause  string // what doctor names as the likely cause
	}{
		{"IMDS unreachable", true, func(t *testing.T, env []string, _ *ec2sim.Sim) []string {
			return with(env, "AWS_EC2_METADATA_SERVICE_ENDPOINT="+simtest.ClosedURL(t))
		}, []string{"instance metadata", "not reachable", "AWS_EC2_METADATA_SERVICE_ENDPOINT"}, "unreachable"},
		{"EC2 unreachable", false, func(t *testing.T, env []string, _ *ec2sim.Sim) []string {
			return with(env, "AWS_ENDPOINT_URL_EC2="+simtest.ClosedURL(t))
		}, []string{"EC2 endpoint", "not reachable", "AWS_ENDPOINT_URL_EC2"}, "unreachable"},
		{"no credentials", false, func(t *testing.T, env []string, sim *ec2sim.Sim) []string {
			sim.DetachRole() // no instance role either; IMDS still says who the node is
			return with(env, "AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=")
		}, []string{"no usable AWS credentials", "AWS_ACCESS_KEY_ID"}, "no-credentials"},
		{"UnauthorizedOperation", false, func(t *testing.T, env []string, sim *ec2sim.Sim) []string {
			sim.DenyAction("DescribeNetworkInterfaces")
			return env
		}, []string{"not authorized", "ec2:DescribeNetworkInterfaces", "IAM"}, "unauthorized"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sim, env := newSim(t, "m5.large")
			dir := t.TempDir()
			if !c.fresh {
				vpc(t, env, "--state-dir", dir, "reconcile").want(t, 0)
			} else {
				vpc(t, env, "--state-dir", dir, "pool", "warm", "--reset", "--no-reconcile").want(t, 0) // an empty state file
			}
			// A pass at rest reads IMDS alone; the resync interval 0 makes it ask EC2.
			env = c.breaks(t, with(env, "VPC_CNI_EC2_RESYNC_INTERVAL=0"), sim)
			// Not the file's bytes: the shared EC2 rate budget lives in the
			// store and is spent by the failed call, by design.
			before := stateOf(t, dir)
			vpc(t, env, "--state-dir", dir, "reconcile").want(t, 1, c.says...)
			if after := stateOf(t, dir); after != before {
				t.Errorf("the failed reconcile changed the state:\nbefore %s\nafter  %s", before, after)
			}
			wantFailureTrace(t, env, dir, c.cause, c.says[0])
		})
	}
}

// wantFailureTrace: status, doctor, events and metrics all show the failed pass.
func wantFailureTrace(t *testing.T, env []string, dir, cause, says string) {
	t.Helper()
	r := vpc(t, env, "--state-dir", dir, "pool", "status", "-o", "json")
	r.want(t, 0)
	var st struct {
		LastReconcile struct{ Outcome, Error, Cause string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatal(err)
	}
	if lr := st.LastReconcile; lr.Outcome != "failed" || lr.Cause != cause || !strings.Contains(lr.Error, says) {
		t.Errorf("status lastReconcile %+v, want failed, cause %s, error saying %q", lr, cause, says)
	}
	vpc(t, env, "--state-dir", dir, "doctor").want(t, 1, "Likely cause ("+cause+")", says)
	vpc(t, env, "--state-dir", dir, "events").want(t, 0, "reconcile-failed", says)
	vpc(t, env, "--state-dir", dir, "metrics").want(t, 0, "vpc_cni_last_reconcile_failed 1", "vpc_cni_reconcile_failures_total 1")
}

// A bad configuration value exits 2 and names the variable.
func TestBadConfigExit2(t *testing.T) {
	_, env := newSim(t, "m5.large")
	for _, v := range []string{"abc", "-1"} {
		dir := t.TempDir()
		vpc(t, with(env, "WARM_IP_TARGET="+v), "--state-dir", dir, "reconcile").want(t, 2, "WARM_IP_TARGET")
	}
	dir := t.TempDir()
	vpc(t, env, "--state-dir", dir, "pool", "warm", "--ip-target", "x").want(t, 2, "ip-target")
	vpc(t, env, "--state-dir", dir, "frobnicate").want(t, 2, "frobnicate")
}

// A pass a bad value stops is on record like any failed pass (status,
// doctor, events, metrics), and the error is said first and alone: gc,
// which reads the same value, does not run and say it again.
func TestAPassStoppedByABadValueIsRecorded(t *testing.T) {
	_, env := newSim(t, "m5.large")
	dir := t.TempDir()
	vpc(t, env, "--state-dir", dir, "reconcile").want(t, 0)
	r := vpc(t, with(env, "WARM_IP_TARGET=abc"), "--state-dir", dir, "reconcile")
	r.want(t, 2, "WARM_IP_TARGET")
	if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); len(lines) != 1 || strings.Contains(r.stderr, "gc") {
		t.Errorf("stderr is not the one error:\n%s", r.stderr)
	}
	wantFailureTrace(t, env, dir, "config", "WARM_IP_TARGET")
}

// `pool warm` persists the target and reconciles at once.
func TestPoolWarmReconcilesAtOnce(t *testing.T) {
	sim, env := newSim(t, "m5.large") // 9 addresses per ENI: 5 fit on the primary
	dir := t.TempDir()
	vpc(t, env, "--state-dir", dir, "pool", "warm", "--ip-target", "5").want(t, 0, "WARM_IP_TARGET")
	if enis, addrs := simHeld(sim); enis != 1 || addrs != 5 {
		t.Errorf("EC2 holds %d ENIs, %d addresses after pool warm; want 1, 5", enis, addrs)
	}
	r := vpc(t, env, "--state-dir", dir, "pool", "status", "-o", "json")
	r.want(t, 0)
	var st struct {
		Knobs []struct{ Name, Value, Source string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, v := range st.Knobs {
		if v.Name == "WARM_IP_TARGET" {
			found = v.Value == "5" && v.Source == "store"
		}
	}
	if !found {
		t.Errorf("status does not show WARM_IP_TARGET=5 from the store: %+v", st.Knobs)
	}
}

// Subnet exhaustion: reconcile fails, status shows the back-off.
func TestExhaustionShowsGrowthBlocked(t *testing.T) {
	sim, env := newSim(t, "m5.large")
	dir := t.TempDir()
	sim.SetSubnetFree(0)
	vpc(t, env, "--state-dir", dir, "reconcile").want(t, 1, "subnet")
	vpc(t, env, "--state-dir", dir, "pool", "status").want(t, 0, "GROWTH BLOCKED")
	sim.ResetCounters()
	vpc(t, env, "--state-dir", dir, "reconcile").want(t, 0)
	for action, n := range sim.Counters() {
		if !strings.HasPrefix(action, "Describe") && !strings.HasPrefix(action, "IMDS") && n > 0 {
			t.Errorf("a reconcile within the back-off called %s %d times", action, n)
		}
	}
}

// The plugin's detached refill (--refill) leaves the lock at once when no
// refill claim stands: a pass that planned since its ADD claimed served it.
// With EC2 unreachable (and asked) a pass fails, so exit 0 shows none ran.
func TestRefillServedMeanwhileRunsNoPass(t *testing.T) {
	_, env := newSim(t, "m5.large")
	dir := t.TempDir()
	vpc(t, env, "--state-dir", dir, "reconcile").want(t, 0) // plans: no claim stands
	env = with(env, "AWS_ENDPOINT_URL_EC2="+simtest.ClosedURL(t), "VPC_CNI_EC2_RESYNC_INTERVAL=0")
	before := stateOf(t, dir)
	vpc(t, env, "--state-dir", dir, "reconcile", "--wait", "--refill", "--log-summary").want(t, 0)
	if after := stateOf(t, dir); after != before {
		t.Errorf("the served refill changed the state:\nbefore %s\nafter  %s", before, after)
	}
	vpc(t, env, "--state-dir", dir, "reconcile", "--wait", "--log-summary").want(t, 1) // a pass: it fails
}

// A pass whose report has a FAILED line exits 1: here the emulator's new ENI
// never gets a link, so its host setup fails (it exited 0).
func TestAPassWithAFailedStepExits1(t *testing.T) {
	_, env := newSim(t, "t3.small")
	dir := t.TempDir()
	vpc(t, with(env, "WARM_IP_TARGET=6"), "--state-dir", dir, "reconcile").want(t, 1, "FAILED", "host setup of eni-", "failed step")
}
