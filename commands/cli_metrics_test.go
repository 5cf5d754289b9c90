package commands

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A reconcile given VPC_CNI_METRICS_FILE leaves the pool in a file for
// node-exporter's textfile collector; `vpcctl metrics` prints the same.
func TestReconcileWritesTheMetricsFile(t *testing.T) {
	_, env := newSim(t, "t3.small")
	dir := t.TempDir()
	prom := filepath.Join(t.TempDir(), "vpc_cni.prom")
	vpc(t, with(env, "VPC_CNI_METRICS_FILE="+prom), "--state-dir", dir, "reconcile").want(t, 0)
	got, err := os.ReadFile(prom)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"vpc_cni_enis 1\n", `vpc_cni_addresses{state="free"} 3` + "\n",
		`vpc_cni_last_reconcile_ec2_calls{action="AssignPrivateIpAddresses"} 1` + "\n"} {
		if !strings.Contains(string(got), want) {
			t.Errorf("metrics file lacks %q:\n%s", want, got)
		}
	}
	vpc(t, env, "--state-dir", dir, "metrics").want(t, 0, `vpc_cni_addresses{state="free"} 3`)
}
