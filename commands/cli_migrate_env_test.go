package commands

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `migrate --aws-node-env` on the reference's own manifest writes the
// config file (0644) and names every variable of the aws-node container;
// it needs no state, EC2 or IMDS. The policy mode's note says what the
// agent's container beside aws-node did with it.
func TestMigrateAWSNodeEnvOnTheReferenceManifest(t *testing.T) {
	manifest, err := filepath.Abs("../migrate/testdata/reference/aws-k8s-cni-v1.23.1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	cfg := filepath.Join(parent, "vpc-cni", "config")
	if err := os.Mkdir(filepath.Dir(cfg), 0o755); err != nil {
		t.Fatal(err)
	}
	dry := vpc(t, nil, "migrate", "--from-aws-node", "--aws-node-env", manifest, "--config", cfg, "--dry-run")
	dry.want(t, 0, "DRY RUN", "WARM_ENI_TARGET=1\n", "AWS_VPC_K8S_CNI_LOGLEVEL", "VPC_CNI_LOG_LEVEL", "MY_POD_NAME",
		"policy was NOT enforced on this node") // its agent runs with --enable-network-policy=false
	if _, err := os.Stat(cfg); !os.IsNotExist(err) {
		t.Fatal("the dry run wrote the config file")
	}
	r := vpc(t, nil, "migrate", "--from-aws-node", "--aws-node-env", manifest, "--config", cfg, "-o", "json")
	r.want(t, 0)
	var rep struct {
		Written bool   `json:"written"`
		Config  string `json:"config"`
		Vars    []struct {
			Name   string `json:"name"`
			Action string `json:"action"`
		} `json:"variables"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	data, err := os.ReadFile(cfg)
	info, _ := os.Stat(cfg)
	if err != nil || !rep.Written || string(data) != rep.Config || info.Mode().Perm() != 0o644 {
		t.Fatalf("config %q (%v), report %+v", data, err, rep)
	}
	if len(rep.Vars) != 27 {
		t.Errorf("named %d variables, want the aws-node container's 27", len(rep.Vars))
	}
	// vpc-cni reads the file it wrote: a first pass planned on a fresh node.
	_, simEnv := newSim(t, "m5.large")
	vpc(t, simEnv, "--config", cfg, "--state-dir", filepath.Join(parent, "state"), "reconcile", "--dry-run").
		want(t, 0, "WARM_ENI_TARGET=1")
	vpc(t, nil, "migrate", "--from-aws-node", "--aws-node-env", manifest, "--config", cfg).want(t, 0, "UNCHANGED")
}

// A variable that would change what the node does stops the migration with
// exit 2 and nothing written; --force writes the rest. A bad value exits 2
// naming the variable.
func TestMigrateAWSNodeEnvRefusals(t *testing.T) {
	dir := t.TempDir()
	env := filepath.Join(dir, "aws-node.env")
	cfg := filepath.Join(dir, "config")
	write := func(text string) {
		if err := os.WriteFile(env, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("WARM_IP_TARGET=5\nENABLE_POD_ENI=true\n")
	vpc(t, nil, "migrate", "--from-aws-node", "--aws-node-env", env, "--config", cfg).want(t, 2, "ENABLE_POD_ENI", "security groups for pods", "--force")
	if _, err := os.Stat(cfg); !os.IsNotExist(err) {
		t.Fatal("a refused migration wrote the config file")
	}
	vpc(t, nil, "migrate", "--from-aws-node", "--aws-node-env", env, "--config", cfg, "--force").want(t, 0, "--force")
	if data, _ := os.ReadFile(cfg); !strings.Contains(string(data), "WARM_IP_TARGET=5\n") || strings.Contains(string(data), "POD_ENI") {
		t.Fatalf("forced config: %q", data)
	}
	write("WARM_IP_TARGET=many\n")
	vpc(t, nil, "migrate", "--from-aws-node", "--aws-node-env", env, "--config", filepath.Join(dir, "other")).want(t, 2, "WARM_IP_TARGET")
	custom, _ := filepath.Abs("../migrate/testdata/custom-pd.yaml")
	vpc(t, nil, "migrate", "--from-aws-node", "--aws-node-env", custom, "--config", filepath.Join(dir, "c2")).
		want(t, 2, "AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG", "ENI_CONFIG_LABEL_DEF")
	vpc(t, nil, "migrate", "--from-aws-node", "--aws-node-env", filepath.Join(dir, "missing")).want(t, 2, "no such file")
}
