package commands

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"vpc-cni/cloud"
	"vpc-cni/internal/testsupport/testenv"
	"vpc-cni/settings"
	"vpc-cni/sim/ec2sim"
)

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func mutatingCalls(sim *ec2sim.Sim) map[string]int {
	out := map[string]int{}
	for action, n := range sim.Counters() {
		if n > 0 && !strings.HasPrefix(action, "Describe") && !strings.HasPrefix(action, "IMDS") {
			out[action] = n
		}
	}
	return out
}

// The timer's command reads the file; a shell's `vpcctl reconcile` with a
// clean environment finds the same file and agrees with it: no EC2 mutation.
// With a knob in its environment it warns, naming the knob, both values and
// where each came from.
func TestTimerAndShellAgreeThroughTheFile(t *testing.T) {
	sim, env := newSim(t, "m5.large")
	dir := t.TempDir()
	cfg := writeConfig(t, "# the node's targets\nWARM_IP_TARGET=3\n")
	timer := vpc(t, env, "--config", cfg, "--state-dir", dir, "reconcile")
	timer.want(t, 0)
	if _, addrs := simHeld(sim); addrs != 3 {
		t.Fatalf("the timer's pass left %d addresses, want 3 (WARM_IP_TARGET=3 from the file)", addrs)
	}

	sim.ResetCounters()
	shell := vpc(t, with(env, "VPC_CNI_CONFIG="+cfg), "--state-dir", dir, "reconcile")
	shell.want(t, 0)
	if m := mutatingCalls(sim); len(m) != 0 {
		t.Errorf("a shell's reconcile with a clean environment made mutating calls %v", m)
	}
	if strings.Contains(shell.stderr, "warning") {
		t.Errorf("no knob differs, yet: %s", shell.stderr)
	}

	sim.ResetCounters()
	r := vpc(t, with(env, "VPC_CNI_CONFIG="+cfg, "WARM_IP_TARGET=5"), "--state-dir", dir, "reconcile")
	r.want(t, 0, "warning", "WARM_IP_TARGET=5 (env)", "WARM_IP_TARGET=3 (file "+cfg+":2)")
	if !strings.Contains(r.stderr, "WARM_IP_TARGET=5 (env)") {
		t.Errorf("the warning is not on stderr: %q", r.stderr)
	}
}

// The same agreement when the file is the default one: here the test names
// it with --config on both sides, as the default path is the host's.
func TestShellWithoutConfigActsOnDefaultsAndSaysSo(t *testing.T) {
	_, env := newSim(t, "m5.large")
	dir := t.TempDir()
	cfg := writeConfig(t, "WARM_IP_TARGET=3\n")
	vpc(t, env, "--config", cfg, "--state-dir", dir, "reconcile").want(t, 0)
	r := vpc(t, env, "--config", cfg, "--state-dir", dir, "pool", "status", "-o", "wide")
	r.want(t, 0, "CONFIG FILE", cfg, "WARM_IP_TARGET", "file "+cfg+":1", "same")
}

func TestConfigFileErrors(t *testing.T) {
	_, env := newSim(t, "m5.large")
	dir := t.TempDir()
	missing := filepath.Join(t.TempDir(), "nope")
	vpc(t, env, "--config", missing, "--state-dir", dir, "reconcile").want(t, 2, missing)
	vpc(t, with(env, "VPC_CNI_CONFIG="+missing), "--state-dir", dir, "pool", "status").want(t, 2, missing)
	// migrate declares --config again; the global one given before it counts.
	ck := filepath.Join(t.TempDir(), "ipam.json")
	if err := os.WriteFile(ck, []byte(`{"version":"vpc-cni-ipam/1","allocations":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	vpc(t, env, "--config", missing, "--state-dir", dir, "migrate", "--from-aws-node", "--dry-run", "--checkpoint", ck).want(t, 2, missing)
	bad := writeConfig(t, "WARM_ENI_TARGET=1\nWARM_IP_TARGET=lots\n")
	vpc(t, env, "--config", bad, "--state-dir", dir, "reconcile").want(t, 2, "WARM_IP_TARGET", bad+":2")
	typo := writeConfig(t, "WARM_IP_TARGTE=3\n")
	vpc(t, env, "--config", typo, "--state-dir", dir, "reconcile").want(t, 2, "did you mean WARM_IP_TARGET")
	// A file any user may write is refused (exit 2), naming the file, its owner and its mode.
	unsafe := writeConfig(t, "WARM_IP_TARGET=3\n")
	if err := os.Chmod(unsafe, 0o666); err != nil {
		t.Fatal(err)
	}
	says := []string{"configuration file " + unsafe, "mode 0666"}
	if testenv.IsRoot() {
		if err := os.Chown(unsafe, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		says = append(says, "uid 65534")
	}
	vpc(t, env, "--config", unsafe, "--state-dir", dir, "reconcile").want(t, 2, says...)
	vpc(t, env, "--config", unsafe, "--state-dir", dir, "pool", "status").want(t, 2, says...)
	// The environment's bad value is not replaced by the file's good one.
	good := writeConfig(t, "WARM_IP_TARGET=3\n")
	vpc(t, with(env, "WARM_IP_TARGET=x"), "--config", good, "--state-dir", dir, "reconcile").want(t, 2, "WARM_IP_TARGET", "(env)")
}

// statusJSON is pool status -o json as a generic document.
func statusJSON(t *testing.T, env []string, args ...string) map[string]any {
	t.Helper()
	r := vpc(t, env, append(args, "pool", "status", "-o", "json")...)
	r.want(t, 0)
	var doc map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	return doc
}

// JSON: camelCase keys, durations as strings, no null lists, no zero times.
func TestStatusJSONIsCamelCaseWithoutNullsOrZeroTimes(t *testing.T) {
	_, env := newSim(t, "m5.large")
	dir := t.TempDir()
	vpc(t, env, "--state-dir", dir, "reconcile").want(t, 0)
	r := vpc(t, env, "--state-dir", dir, "pool", "status", "-o", "json")
	r.want(t, 0)
	for _, bad := range []string{"null", "0001-01-01", `"MaxENIs"`, `"IPv4PerENI"`} {
		if strings.Contains(r.stdout, bad) {
			t.Errorf("status JSON contains %s:\n%s", bad, r.stdout)
		}
	}
	var doc any
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	walkKeys(t, doc, "")
	last := doc.(map[string]any)["lastReconcile"].(map[string]any)
	if d, ok := last["duration"].(string); !ok || !strings.HasSuffix(d, "s") {
		t.Errorf("lastReconcile.duration = %#v, want a string like \"120ms\"", last["duration"])
	}
	if last["outcome"] != "ok" {
		t.Errorf("lastReconcile.outcome = %v", last["outcome"])
	}
}

func walkKeys(t *testing.T, v any, path string) {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			if k != "" && (k[0] < 'a' || k[0] > 'z') && !strings.HasPrefix(path, ".lastReconcile.calls") && !strings.HasPrefix(path, ".figures") {
				t.Errorf("key %s%s is not camelCase", path, "."+k)
			}
			walkKeys(t, c, path+"."+k)
		}
	case []any:
		for _, c := range x {
			walkKeys(t, c, path+"[]")
		}
	}
}

// Status shows, per knob, this invocation's value and source and the last
// pass's; table, wide, JSON and YAML agree.
func TestStatusShowsKnobsAndTheLastPass(t *testing.T) {
	_, env := newSim(t, "m5.large")
	dir := t.TempDir()
	cfg := writeConfig(t, "WARM_IP_TARGET=3\n")
	vpc(t, env, "--config", cfg, "--state-dir", dir, "reconcile").want(t, 0)
	doc := statusJSON(t, with(env, "WARM_IP_TARGET=4"), "--config", cfg, "--state-dir", dir)
	var knob map[string]any
	for _, k := range doc["knobs"].([]any) {
		if m := k.(map[string]any); m["name"] == "WARM_IP_TARGET" {
			knob = m
		}
	}
	last, _ := knob["lastPass"].(map[string]any)
	if knob["value"] != "4" || knob["source"] != "env" || knob["differsFromLastPass"] != true ||
		last["value"] != "3" || last["source"] != "file" || last["where"] != cfg+":1" {
		t.Fatalf("WARM_IP_TARGET in status: %+v", knob)
	}
	for _, o := range []string{"wide", "yaml"} { // -o table has one KNOBS line
		r := vpc(t, with(env, "WARM_IP_TARGET=4"), "--config", cfg, "--state-dir", dir, "pool", "status", "-o", o)
		r.want(t, 0, "WARM_IP_TARGET", "4", "env", "3", "file", cfg+":1")
	}
}

// Excess waiting for RELEASE_DELAY is shown with the time it goes back.
func TestStatusShowsPendingExcessWithItsReleaseTime(t *testing.T) {
	_, env := newSim(t, "m5.large")
	dir := t.TempDir()
	cfg := writeConfig(t, "WARM_IP_TARGET=5\n")
	vpc(t, env, "--config", cfg, "--state-dir", dir, "reconcile").want(t, 0)
	if err := os.WriteFile(cfg, []byte("WARM_IP_TARGET=1\nRELEASE_DELAY=10m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	vpc(t, env, "--config", cfg, "--state-dir", dir, "reconcile").want(t, 0)
	doc := statusJSON(t, env, "--config", cfg, "--state-dir", dir)
	ex, ok := doc["excess"].(map[string]any)
	if !ok || ex["addresses"] != float64(4) || ex["releaseDelay"] != "10m0s" {
		t.Fatalf("excess = %#v", doc["excess"])
	}
	since, err1 := time.Parse(time.RFC3339, ex["since"].(string))
	at, err2 := time.Parse(time.RFC3339, ex["releaseAt"].(string))
	if err1 != nil || err2 != nil || at.Sub(since) != 10*time.Minute {
		t.Fatalf("since %v releaseAt %v (%v %v)", ex["since"], ex["releaseAt"], err1, err2)
	}
	vpc(t, env, "--config", cfg, "--state-dir", dir, "pool", "status").want(t, 0, "EXCESS", "4 addresses", "RELEASE_DELAY 10m0s")
}

// A shortfall the node cannot meet says why: the ENI limit, or max pods.
func TestStatusExplainsAnUnmetShortfall(t *testing.T) {
	_, env := newSim(t, "m5.large") // 3 ENIs x 9 pod addresses, max pods 29
	dir := t.TempDir()
	vpc(t, env, "--state-dir", dir, "reconcile").want(t, 0)
	for _, c := range []struct {
		env  []string
		want string
	}{
		{[]string{"WARM_IP_TARGET=100000"}, "ENI limit: 3 of 3 ENIs"},
		{[]string{"WARM_IP_TARGET=100000", "MAX_PODS=12"}, "max pods: the node may hold 12"},
	} {
		doc := statusJSON(t, with(env, c.env...), "--state-dir", dir)
		sf, ok := doc["shortfall"].(map[string]any)
		if !ok || sf["unmet"].(float64) <= 0 || !strings.Contains(fmt.Sprint(sf["reasons"]), c.want) {
			t.Errorf("%v: shortfall = %#v, want an unmet part because %q", c.env, doc["shortfall"], c.want)
		}
		vpc(t, with(env, c.env...), "--state-dir", dir, "pool", "status").want(t, 0, "SHORTFALL", "BECAUSE", c.want)
	}
}

// During a subnet back-off the shortfall's reason names it and its end; the
// last pass's outcome and error are in status.
func TestStatusShowsBackOffAndTheFailedPass(t *testing.T) {
	sim, env := newSim(t, "m5.large")
	dir := t.TempDir()
	sim.SetSubnetFree(0)
	vpc(t, env, "--state-dir", dir, "reconcile").want(t, 1, "subnet")
	doc := statusJSON(t, env, "--state-dir", dir)
	sf, _ := doc["shortfall"].(map[string]any)
	if !strings.Contains(fmt.Sprint(sf["reasons"]), "subnet back-off until") {
		t.Errorf("shortfall = %#v", doc["shortfall"])
	}
	last, _ := doc["lastReconcile"].(map[string]any)
	if last["outcome"] != "failed" || last["error"] == nil {
		t.Errorf("lastReconcile = %#v", last)
	}
}

// `pool status` shows every knob the file may set, in every format but the
// screen-sized table, and the EC2 rate shown as default is the cloud client's.
func TestPoolStatusShowsEveryKnob(t *testing.T) {
	_, env := newSim(t, "m5.large")
	dir := t.TempDir()
	cfg := writeConfig(t, "AWS_VPC_K8S_CNI_CONNMARK=0x40\n")
	vpc(t, env, "--config", cfg, "--state-dir", dir, "reconcile").want(t, 0)
	for _, o := range []string{"wide", "json", "yaml"} {
		r := vpc(t, env, "--config", cfg, "--state-dir", dir, "pool", "status", "-o", o)
		r.want(t, 0, settings.FileKeys...)
	}
	doc := statusJSON(t, env, "--config", cfg, "--state-dir", dir)
	got := map[string]map[string]any{}
	for _, k := range doc["knobs"].([]any) {
		m := k.(map[string]any)
		got[m["name"].(string)] = m
	}
	if len(got) != len(settings.FileKeys) {
		t.Errorf("%d knobs, the file may set %d", len(got), len(settings.FileKeys))
	}
	if c := got[settings.ConnMark]; c["value"] != "0x40" || c["source"] != "file" {
		t.Errorf("connmark: %v", c)
	}
	want := strconv.FormatFloat(cloud.DefaultDescribeBudget.Rate, 'f', -1, 64)
	if r := got[settings.EC2DescribeRate]; r["value"] != want || cloud.DefaultMutatingBudget.Rate != cloud.DefaultDescribeBudget.Rate ||
		settings.DefaultEC2Rate != want {
		t.Errorf("the describe rate shows %v; the cloud client's default is %s", r, want)
	}
}
