package e2e

import (
	"path/filepath"
	"testing"
)

// PolicyChurn: ADD then DEL of one pod at a time, vpc-cni with
// NETWORK_POLICY_ENFORCING_MODE=standard against the stand-in agent
// (testdata/npagent, the reference's generated server) and with the mode
// off, rounds alternated. It reports the median cost of the agent's calls:
// the target is a few ms at most.
func BenchmarkPolicyChurn(b *testing.B) {
	w := warmWorld(b)
	dir := installPlugins(b)
	agent := startAgent(b, false)
	path := filepath.Join(dir, "vpc-cni")
	on := &contestant{name: "policy-on", path: path, settle: func() {},
		conf: mustJSON(b, w.conf(map[string]any{"policyAgentSocket": agent.sock})),
		env:  []string{"CNI_PATH=" + dir, "NETWORK_POLICY_ENFORCING_MODE=standard"}}
	off := &contestant{name: "policy-off", path: path, settle: func() {}, conf: mustJSON(b, w.conf(nil)),
		env: []string{"CNI_PATH=" + dir}}
	all := []*contestant{on, off}
	rotated(b, roundsOf(b, w, all, (*contestant).churn))
	reportContest(b, "policy-churn", all)
	addCost, delCost := on.add.pct(0.5)-off.add.pct(0.5), on.del.pct(0.5)-off.del.pct(0.5)
	b.ReportMetric(addCost, "policy-add-cost-ms")
	b.ReportMetric(delCost, "policy-del-cost-ms")
	if n := len(agent.calls(b)); n != 2*len(on.add.d) {
		b.Fatalf("the agent got %d calls for %d ADDs and DELs", n, 2*len(on.add.d))
	}
	b.Logf("the agent's calls cost ADD %+.2f ms, DEL %+.2f ms at the median (policy on minus off)", addCost, delCost)
}
