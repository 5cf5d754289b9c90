package whatif

import (
	"testing"
	"time"
)

// At rest on the default timer and safety net, the IMDS steady state keeps a
// cluster's non-mutating calls to the nodes divided by the resync interval
// (and the hourly leak sweep); reading EC2 every pass costs one call per node
// per pass.
func TestClusterAtRestCostsTheResyncOnly(t *testing.T) {
	o := ClusterOptions{Options: Options{InstanceType: "m5.xlarge", ENILatency: 5 * time.Second,
		RefillDelay: time.Second, Rest: 2 * time.Hour}, Nodes: 100, PodsPerNode: 30}
	imds, err := Cluster(Setting{Env: map[string]string{"WARM_IP_TARGET": "1"}, Interval: 30 * time.Second}, o)
	if err != nil {
		t.Fatal(err)
	}
	every, err := Cluster(Setting{Env: map[string]string{"WARM_IP_TARGET": "1", "VPC_CNI_EC2_RESYNC_INTERVAL": "0"},
		Interval: 30 * time.Second}, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("imds %+v", imds)
	t.Logf("every pass %+v", every)
	if imds.RestPerSecond > 100.0/(13*60)+100.0/3600 || every.RestPerSecond < 100.0/30*0.9 {
		t.Errorf("at rest: %.2f calls/s with IMDS (want ≤ 100 nodes / 13.5 min + the leak sweep), %.2f reading EC2 every pass (want ≈ 100/30 s)",
			imds.RestPerSecond, every.RestPerSecond)
	}
}
