package commands

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"vpc-cni/maxpods"
)

// Offline, in every output form: the table says the answer and how; -o
// json carries the values for Karpenter and nodeadm; the knobs come from
// --config as every vpc-cni process reads them.
func TestMaxPodsOffline(t *testing.T) {
	vpc(t, nil, "max-pods", "--instance-type", "m5.large").want(t, 0, "MAX PODS", "29", "3 ENIs x 9 slots x 1 = 27 addresses")
	vpc(t, nil, "max-pods", "--instance-type", "m5.large", "-o", "wide").want(t, 0, "EC2NodeClass.spec.kubelet.maxPods: 29")
	vpc(t, nil, "max-pods", "--instance-type", "m5.large", "-o", "yaml").want(t, 0, "maxPods: 29")
	cfg := filepath.Join(t.TempDir(), "config")
	writeFile(t, cfg, "ENABLE_PREFIX_DELEGATION=true\n")
	r := vpc(t, nil, "--config", cfg, "max-pods", "--instance-type", "m5.large", "-o", "json")
	r.want(t, 0)
	var rep maxpods.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.MaxPods != 110 || rep.Capacity.Mode != "prefix" || rep.Karpenter.MaxPods != 110 ||
		rep.Nodeadm.Field != "NodeConfig.spec.kubelet.config.maxPods" || !strings.Contains(rep.Nodeadm.YAML, "maxPods: 110") {
		t.Errorf("report %+v", rep)
	}
}

// Bad input exits 2 and names the problem; no state yet exits 1 and says
// what to run.
func TestMaxPodsBadInput(t *testing.T) {
	vpc(t, nil, "max-pods", "--instance-type", "m5.larg").want(t, 2, `"m5.larg"`, "did you mean m5.large")
	vpc(t, nil, "max-pods", "--instance-type", "m5.large", "-o", "xml").want(t, 2, "--output")
	vpc(t, []string{"MAX_PODS_CAP=x"}, "max-pods", "--instance-type", "m5.large").want(t, 2, "MAX_PODS_CAP")
	dir := t.TempDir()
	vpc(t, nil, "--state-dir", dir, "max-pods").want(t, 1, "vpcctl reconcile")
	vpc(t, nil, "--state-dir", dir, "max-pods", "--instance-type", "m5.large", "--write-kubelet-dropin", filepath.Join(dir, "x.conf")).
		want(t, 0, "wrote")
}

// Online, it reads the node's state and the knobs: MAX_ENI in the
// environment of this command changes the answer, as it would the pool's.
func TestMaxPodsOnline(t *testing.T) {
	_, env := newSim(t, "t3.small")
	dir := t.TempDir()
	vpc(t, env, "--state-dir", dir, "reconcile").want(t, 0)
	vpc(t, env, "--state-dir", dir, "max-pods", "-o", "json").want(t, 0, `"maxPods": 11`, `"source": "node"`)
	vpc(t, with(env, "MAX_ENI=2"), "--state-dir", dir, "max-pods", "-o", "json").want(t, 0, `"maxPods": 8`)
	dropIn := filepath.Join(dir, "d", "40.conf")
	vpc(t, env, "--state-dir", dir, "max-pods", "--write-kubelet-dropin", dropIn).want(t, 0, "wrote "+dropIn+": maxPods 11")
	vpc(t, env, "--state-dir", dir, "max-pods", "--write-kubelet-dropin", dropIn).want(t, 0, "unchanged "+dropIn)
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// doctor reads the kubelet's configuration (a temp file here) and fails
// when its maxPods is above what the node holds.
func TestDoctorWarnsOfTheKubeletsMaxPods(t *testing.T) {
	_, env := newSim(t, "t3.small")
	dir := t.TempDir()
	vpc(t, env, "--state-dir", dir, "reconcile").want(t, 0)
	config, dropIns := filepath.Join(dir, "kubelet", "config.yaml"), filepath.Join(dir, "kubelet", "conf.d")
	writeFile(t, config, "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nmaxPods: 110\n")
	doctor := func() run {
		return vpc(t, env, "--state-dir", dir, "doctor", "--kubelet-config", config, "--kubelet-config-dir", dropIns)
	}
	r := doctor()
	if !strings.Contains(r.stdout, "the kubelet's maxPods is 110") || !strings.Contains(r.stdout, "hold 11 pods") || r.code != 1 {
		t.Errorf("exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	vpc(t, env, "--state-dir", dir, "max-pods", "--write-kubelet-dropin", filepath.Join(dropIns, maxpods.DropInName)).want(t, 0)
	r = doctor()
	if !strings.Contains(r.stdout, "11 ("+filepath.Join(dropIns, maxpods.DropInName)+"), what the node holds") {
		t.Errorf("after the drop-in:\n%s%s", r.stdout, r.stderr)
	}
}
