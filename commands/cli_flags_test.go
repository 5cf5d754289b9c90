package commands

import (
	"net"
	"strings"
	"testing"

	"vpc-cni/internal/testsupport/simtest"
	"vpc-cni/store"
)

// --wait that never gets the lock within --timeout did not run: exit 1.
func TestWaitThatNeverGetsTheLockExits1(t *testing.T) {
	_, env := newSim(t, "m5.large")
	dir := t.TempDir()
	st, err := store.OpenNew(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	unlock, held, err := st.LockReconcile(false, 0)
	if err != nil || !held {
		t.Fatalf("taking the lock: held %v, %v", held, err)
	}
	defer unlock()
	vpc(t, env, "--state-dir", dir, "reconcile", "--wait", "--timeout", "1s").want(t, 1, "did not run", "--timeout 1s")
	vpc(t, env, "--state-dir", dir, "reconcile").want(t, 0, "another reconcile holds the lock")
	// The pass that did not run is on record; the one that left the work to
	// the holder is not a failure.
	vpc(t, env, "--state-dir", dir, "events").want(t, 0, "reconcile-failed", "lock: another reconcile held the lock")
	vpc(t, env, "--state-dir", dir, "metrics").want(t, 0, "vpc_cni_reconcile_failures_total 1")
}

// hungURL accepts connections and never answers.
func hungURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	return "http://" + l.Addr().String()
}

// --timeout bounds the pass in both directions: against a hung endpoint the
// pass ends on its own deadline, and says so, not on a per-attempt timeout
// that gives up first (cloud.AttemptTimeout gives each attempt the time left;
// cloud's tests pin that and the per-attempt wording).
func TestTimeoutEndsOnThePassDeadline(t *testing.T) {
	_, env := newSim(t, "m5.large")
	dir := t.TempDir()
	vpc(t, env, "--state-dir", dir, "reconcile").want(t, 0)
	// A pass at rest reads IMDS alone; the resync interval 0 makes it ask EC2.
	r := vpc(t, with(env, "AWS_ENDPOINT_URL_EC2="+hungURL(t), "VPC_CNI_EC2_RESYNC_INTERVAL=0"), "--state-dir", dir, "reconcile", "--timeout", "2s")
	r.want(t, 1, "the pass's --timeout of 2s ran out", "ec2:DescribeNetworkInterfaces", "raise --timeout?")
	if strings.Contains(r.stderr, "request timed out after") {
		t.Errorf("the pass's deadline reported as a per-attempt timeout: %s", r.stderr)
	}
}

// pool warm that saved the override but could not reconcile says both.
func TestPoolWarmSavedButNotReconciled(t *testing.T) {
	_, env := newSim(t, "m5.large")
	dir := t.TempDir()
	vpc(t, env, "--state-dir", dir, "reconcile").want(t, 0)
	// A pass at rest reads IMDS alone; the resync interval 0 makes it ask EC2.
	vpc(t, with(env, "AWS_ENDPOINT_URL_EC2="+simtest.ClosedURL(t), "VPC_CNI_EC2_RESYNC_INTERVAL=0"), "--state-dir", dir, "pool", "warm", "--ip-target", "4").
		want(t, 1, "saved WARM_IP_TARGET=4", "it stays in force", "reconciling now failed", "not reachable")
	vpc(t, env, "--state-dir", dir, "pool", "status").want(t, 0, "WARM_IP_TARGET")
}

// pool warm whose pass a configuration error stops exits 2, as its help and
// docs/operating.md say, naming the key.
func TestPoolWarmStoppedByAConfigurationErrorExits2(t *testing.T) {
	_, env := newSim(t, "m5.large")
	dir := t.TempDir()
	vpc(t, env, "--state-dir", dir, "reconcile").want(t, 0)
	vpc(t, with(env, "VPC_CNI_EC2_DESCRIBE_RATE=fast"), "--state-dir", dir, "pool", "warm", "--ip-target", "4").
		want(t, 2, "VPC_CNI_EC2_DESCRIBE_RATE")
	help := vpc(t, nil, "pool", "warm", "--help")
	help.want(t, 0, "2 bad usage or configuration, also when a configuration error stopped the reconcile")
}

// Mistyped commands and flags get a suggestion; a bare number given as a
// duration gets the fix. All exit 2.
func TestUsageSuggestions(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		args []string
		says string
	}{
		{[]string{"reconcil"}, `did you mean "reconcile"?`},
		{[]string{"pool", "statu"}, `did you mean "status"?`},
		{[]string{"pool", "warm", "--ip-targte", "3"}, "did you mean --ip-target?"},
		{[]string{"--stat-dir", dir, "events"}, "did you mean --state-dir?"},
		{[]string{"--version"}, "did you mean the command 'vpcctl version'?"},
		{[]string{"reconcile", "--timeout", "5"}, "--timeout 5: a duration needs a unit: use 5s"},
		{[]string{"pool", "warm", "--ip-target", "3", "--timeout", "90"}, "use 90s"},
		{[]string{"reconcile", "--timeout", "5x"}, "not a duration"},
	}
	for _, c := range cases {
		vpc(t, nil, append([]string{"--state-dir", dir}, c.args...)...).want(t, 2, c.says)
	}
}

// A flag unlike every flag gets no suggestion (--version suggested
// --state-dir).
func TestAFarFlagGetsNoSuggestion(t *testing.T) {
	for _, args := range [][]string{{"--frobnicate"}, {"pool", "status", "--verbose"}} {
		r := vpc(t, nil, args...)
		r.want(t, 2, "flag provided but not defined")
		if strings.Contains(r.stderr, "did you mean") {
			t.Errorf("%v: %s", args, r.stderr)
		}
	}
}
