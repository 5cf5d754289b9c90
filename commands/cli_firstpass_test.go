package commands

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A dry run on a node without state plans the first pass in memory: it
// prints what the adoption would find and the plan, makes no mutating EC2
// call, and creates no directory or file (no state dir, state.db, lock or log).
func TestReconcileDryRunOnAFreshNode(t *testing.T) {
	sim, env := newSim(t, "m5.large")
	parent := t.TempDir()
	dir := filepath.Join(parent, "state")
	r := vpc(t, env, "--state-dir", dir, "reconcile", "--dry-run")
	r.want(t, 0, "DRY RUN", "no state", "WOULD ADOPT eni-", "ACTION 1", "WOULD CALL")
	if strings.Contains(r.stdout, "nothing to do") {
		t.Errorf("a fresh node's first pass has work to plan:\n%s", r.stdout)
	}
	j := vpc(t, env, "--state-dir", dir, "reconcile", "--dry-run", "-o", "json")
	j.want(t, 0)
	var fp struct {
		DryRun bool `json:"dryRun"`
		Node   struct {
			InstanceID string `json:"instanceId"`
		} `json:"node"`
		ENIs []struct {
			ID          string `json:"id"`
			DeviceIndex int    `json:"deviceIndex"`
		} `json:"enis"`
		Plan struct {
			Actions []json.RawMessage `json:"actions"`
		} `json:"plan"`
		Calls []string `json:"calls"`
	}
	if err := json.Unmarshal([]byte(j.stdout), &fp); err != nil {
		t.Fatalf("%v\n%s", err, j.stdout)
	}
	if !fp.DryRun || fp.Node.InstanceID == "" || len(fp.ENIs) == 0 || fp.ENIs[0].DeviceIndex != 0 ||
		len(fp.Plan.Actions) == 0 || len(fp.Calls) == 0 {
		t.Errorf("the JSON lacks the node, its primary ENI, the plan or the calls:\n%s", j.stdout)
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 0 {
		t.Fatalf("the dry run created %s", entries[0].Name())
	}
	if m := mutatingCalls(sim); len(m) != 0 {
		t.Errorf("the dry run made mutating EC2 calls: %v", m)
	}
	if counts := sim.Counters(); counts["DescribeNetworkInterfaces"] == 0 {
		t.Errorf("the dry run did not read the node's ENIs from EC2: %v", counts)
	}
	// The pass it planned is the one that runs.
	vpc(t, env, "--state-dir", dir, "reconcile").want(t, 0)
	if len(mutatingCalls(sim)) == 0 {
		t.Errorf("the real pass made none of the planned calls: %v", sim.Counters())
	}
}
