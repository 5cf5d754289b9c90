package migrate

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"vpc-cni/internal/usage"
	"vpc-cni/settings"
)

func readEnv(t *testing.T, name string) []EnvVar {
	t.Helper()
	env, err := ReadAWSNodeEnv(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return env.Vars
}

func byName(r *ConfigReport) map[string]ConfigVar {
	out := map[string]ConfigVar{}
	for _, v := range r.Vars {
		out[v.Name] = v
	}
	return out
}

// The reference's own manifest, as published: every variable of the aws-node container
// (not its init or network-policy containers) is named, nothing stops the
// migration, and the file written reads back through the settings code.
func TestReferenceManifestBecomesTheConfigFile(t *testing.T) {
	vars := readEnv(t, "reference/aws-k8s-cni-v1.23.1.yaml")
	var names []string
	for _, v := range vars {
		names = append(names, v.Name)
	}
	if len(names) != 27 || names[0] != "ADDITIONAL_ENI_TAGS" || names[26] != "MY_POD_NAME" || slices.Contains(names, "DISABLE_TCP_EARLY_DEMUX") {
		t.Fatalf("read %d variables %v; want the aws-node container's 27", len(names), names)
	}
	path := filepath.Join(t.TempDir(), "config")
	rep, err := MigrateConfig(vars, ConfigOptions{Source: "aws-k8s-cni.yaml", Path: path})
	if err != nil {
		t.Fatal(err)
	}
	got := byName(rep)
	for _, v := range rep.Vars {
		if v.Stops || v.Fate == unknownFate || (v.Action != Written && v.Note == "") {
			t.Errorf("%s: %+v", v.Name, v)
		}
	}
	want := map[string]string{"WARM_ENI_TARGET": Written, "AWS_VPC_K8S_CNI_VETHPREFIX": Written, "ENABLE_SUBNET_DISCOVERY": Written,
		"AWS_VPC_K8S_CNI_LOGLEVEL": Dropped, "ENABLE_IPv6": Written, "NETWORK_POLICY_ENFORCING_MODE": Written,
		"MY_NODE_NAME": Dropped, "VPC_CNI_VERSION": Dropped, "DISABLE_METRICS": Dropped}
	for name, action := range want {
		if got[name].Action != action {
			t.Errorf("%s: %s, want %s (%s)", name, got[name].Action, action, got[name].Note)
		}
	}
	data, err := os.ReadFile(path)
	info, _ := os.Stat(path)
	if err != nil || string(data) != rep.Config || info.Mode().Perm() != 0o644 || !rep.Written {
		t.Fatalf("file %q (%v, %v), report %+v", data, err, info.Mode(), rep)
	}
	f, err := settings.ReadFile(path, true)
	if err != nil {
		t.Fatal(err)
	}
	e, err := settings.Resolve(settings.Overrides{}, settings.Inputs{File: f})
	if err != nil || e.Source(settings.WarmENITarget) != settings.FromFile || e.VethPrefix != "eni" {
		t.Fatalf("the written file resolves to %+v, %v", e.Values, err)
	}
	again, err := MigrateConfig(vars, ConfigOptions{Source: "aws-k8s-cni.yaml", Path: path})
	if err != nil || !again.Same || again.Written {
		t.Fatalf("a second run: %+v, %v", again, err)
	}
}

// Custom networking and prefix delegation: custom networking's ENIConfigs
// live in the API, so the migration stops naming them; --force writes the
// config with prefix delegation and custom networking on.
func TestCustomNetworkingAndPrefixDelegation(t *testing.T) {
	vars := readEnv(t, "custom-pd.yaml")
	path := filepath.Join(t.TempDir(), "config")
	rep, err := MigrateConfig(vars, ConfigOptions{Source: "custom-pd.yaml", Path: path})
	if !usage.Is(err) || !strings.Contains(err.Error(), "AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG") || !strings.Contains(err.Error(), "ENI_CONFIG_LABEL_DEF") {
		t.Fatalf("want a usage error naming both, got %v", err)
	}
	if _, serr := os.Stat(path); !os.IsNotExist(serr) {
		t.Fatal("a refused migration wrote the file")
	}
	if v := byName(rep)["AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG"]; !strings.Contains(v.Note, "ENI_CONFIG_<ZONE>") {
		t.Errorf("custom networking's note: %q", v.Note)
	}
	rep, err = MigrateConfig(vars, ConfigOptions{Source: "custom-pd.yaml", Path: path, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"ENABLE_PREFIX_DELEGATION=true\n", "WARM_PREFIX_TARGET=1\n",
		"AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG=true\n", `ADDITIONAL_ENI_TAGS={"team":"net"}` + "\n"} {
		if !strings.Contains(rep.Config, line) {
			t.Errorf("config lacks %q:\n%s", line, rep.Config)
		}
	}
	if strings.Contains(rep.Config, "ENI_CONFIG_LABEL_DEF") || strings.Contains(rep.Config, "LOGLEVEL") {
		t.Errorf("config carries a dropped variable:\n%s", rep.Config)
	}
}

// Each variable's fate, through the KEY=VALUE form.
func TestEachVariablesFate(t *testing.T) {
	cases := []struct {
		line   string
		action string
		stops  bool
		says   string
	}{
		{"ENABLE_POD_ENI=true", Dropped, true, "security groups for pods"},
		{"ENABLE_POD_ENI=false", Dropped, false, "default"},
		{"ENABLE_IPv6=true", Written, false, ""}, // carried since IPv6 pods
		{"ENABLE_IPv4=True", Written, false, ""},
		{"AWS_VPC_K8S_CNI_LOGLEVEL=INFO", Dropped, false, "VPC_CNI_LOG_LEVEL"},
		{"AWS_EC2_ENDPOINT=https://ec2.example", Dropped, true, "AWS_ENDPOINT_URL_EC2"},
		{"AWS_REGION=us-west-2", Dropped, false, "SDK"},
		{"SOMETHING_ELSE=1", Dropped, true, "not an aws-node variable"},
		{"# CLUSTER_NAME from configmap cluster-info", Dropped, true, "Kubernetes API"},
		{"# MY_NODE_NAME from field path spec.nodeName", Dropped, false, "Kubernetes API"},
		{"ENI_CONFIG_US_WEST_2A=subnet=subnet-0abc", Written, false, ""},
		{"WARM_IP_TARGET=5", Written, false, ""},
		{"MAX_ENI=", Dropped, false, "empty"},
	}
	for _, c := range cases {
		vars, err := parseEnvLines([]byte(c.line + "\n"))
		if err != nil || len(vars) != 1 {
			t.Fatalf("%s: %v %v", c.line, vars, err)
		}
		v := classify(vars, AgentUnknown)[0]
		if v.Action != c.action || v.Stops != c.stops || !strings.Contains(v.Note, c.says) {
			t.Errorf("%s: %+v; want %s, stops %v, saying %q", c.line, v, c.action, c.stops, c.says)
		}
	}
}

// A bad value is refused by the settings code, naming the variable.
func TestBadValueNamesTheVariable(t *testing.T) {
	for _, line := range []string{"WARM_ENI_TARGET=lots", "POD_MTU=100", "AWS_VPC_K8S_CNI_VETHPREFIX=toolong", `ADDITIONAL_ENI_TAGS={"k8s.amazonaws.com/x":"y"}`} {
		vars, _ := parseEnvLines([]byte(line))
		name, _, _ := strings.Cut(line, "=")
		path := filepath.Join(t.TempDir(), "config")
		_, err := MigrateConfig(vars, ConfigOptions{Source: "env", Path: path, Force: true})
		if !usage.Is(err) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v", line, err)
		}
		if _, serr := os.Stat(path); !os.IsNotExist(serr) {
			t.Errorf("%s: a bad value wrote the file", line)
		}
	}
}

// A dry run writes nothing; a different file is replaced only with --force.
func TestDryRunAndAnExistingFile(t *testing.T) {
	vars, _ := parseEnvLines([]byte("WARM_IP_TARGET=3\n"))
	path := filepath.Join(t.TempDir(), "config")
	rep, err := MigrateConfig(vars, ConfigOptions{Source: "env", Path: path, DryRun: true})
	if err != nil || rep.Written || !strings.Contains(rep.Config, "WARM_IP_TARGET=3") {
		t.Fatalf("%+v %v", rep, err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatal("the dry run wrote the file")
	}
	if err := os.WriteFile(path, []byte("WARM_IP_TARGET=7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := MigrateConfig(vars, ConfigOptions{Source: "env", Path: path}); !usage.Is(err) || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("an existing file: %v", err)
	}
	if rep, err := MigrateConfig(vars, ConfigOptions{Source: "env", Path: path, Force: true}); err != nil || !rep.Written {
		t.Fatalf("--force: %+v %v", rep, err)
	}
}

// The reader takes what `kubectl get -o yaml` prints: a List, a sequence at
// its key's indent, a block scalar, quoted and folded scalars, comments.
func TestYAMLSubset(t *testing.T) {
	doc := `apiVersion: v1
kind: List
items:
- apiVersion: apps/v1
  kind: DaemonSet
  metadata:
    annotations:
      note: |
        first: line
        - not an item
  spec:
    template:
      spec:
        containers:
        - name: aws-node # the one
          env:
          - name: "A"
            value: 'it''s'
          - name: B
            value: "x\ty"
          - name: C
            value: a long value
              folded by the printer
          - {name: D, value: "4"}
`
	vars, err := parseDaemonSet([]byte(strings.Replace(doc, "- {name: D", "- &anchor {name: D", 1)))
	if err == nil {
		t.Fatalf("an anchored env entry has no name this reader knows, want an error: %v", vars)
	}
	env, err := parseDaemonSet([]byte(doc))
	want := []EnvVar{{Name: "A", Value: "it's"}, {Name: "B", Value: "x\ty"}, {Name: "C", Value: "a long value folded by the printer"}, {Name: "D", Value: "4"}}
	if err != nil || !slices.Equal(env.Vars, want) {
		t.Fatalf("%+v %v", vars, err)
	}
	if _, err := parseDaemonSet([]byte("kind: DaemonSet\nspec: {}\n")); err == nil || !strings.Contains(err.Error(), "aws-node") {
		t.Fatalf("no aws-node container: %v", err)
	}
}

func FuzzParseYAMLDocs(f *testing.F) {
	data, _ := os.ReadFile(filepath.Join("testdata", "custom-pd.yaml"))
	f.Add(data)
	f.Add([]byte("a:\n- b: 'x\n  c: |\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = parseYAMLDocs(b)
		_, _ = parseDaemonSet(b)
	})
}

// `kubectl set env ds/aws-node --list` prints every container under its
// header: only the aws-node container's variables are aws-node's.
func TestEnvListingOfSeveralContainersReadsAWSNodeOnly(t *testing.T) {
	listing := `# DaemonSet aws-node, container aws-node
WARM_IP_TARGET=3
# MY_NODE_NAME from field path spec.nodeName
# DaemonSet aws-node, container aws-eks-nodeagent
WARM_IP_TARGET=9
MINIMUM_IP_TARGET=4
# MY_NODE_NAME from field path spec.nodeName
`
	vars, err := parseEnvLines([]byte(listing))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, v := range vars {
		got[v.Name] = v.Value + v.From
	}
	want := map[string]string{"WARM_IP_TARGET": "3", "MY_NODE_NAME": "field path spec.nodeName"}
	if len(got) != len(want) || got["WARM_IP_TARGET"] != "3" || got["MY_NODE_NAME"] != want["MY_NODE_NAME"] {
		t.Errorf("read %v, want %v", got, want)
	}

	_, err = parseEnvLines([]byte("# DaemonSet aws-node, container aws-eks-nodeagent\nWARM_IP_TARGET=9\n"))
	if err == nil || !strings.Contains(err.Error(), "aws-node") {
		t.Errorf("a listing without the aws-node container: %v", err)
	}
}

// aws-node's policy mode is carried with a note saying the agent must run
// beside vpc-cni; none (which the agent refuses) is policy off.
func TestNetworkPolicyModeIsCarried(t *testing.T) {
	for value, want := range map[string]string{"standard": Written, "Strict": Written, "none": Dropped} {
		vars := []EnvVar{{Name: "NETWORK_POLICY_ENFORCING_MODE", Value: value}}
		rep, err := MigrateConfig(vars, ConfigOptions{Source: "env", Path: filepath.Join(t.TempDir(), "config")})
		if err != nil {
			t.Fatalf("%s: %v", value, err)
		}
		v := byName(rep)["NETWORK_POLICY_ENFORCING_MODE"]
		if v.Action != want || v.Stops {
			t.Errorf("%s: %+v, want %s", value, v, want)
		}
		if want == Written && (!strings.Contains(v.Note, "networkPolicy.enabled=true") || !strings.Contains(rep.Config, "NETWORK_POLICY_ENFORCING_MODE="+value)) {
			t.Errorf("%s: note %q, config %q", value, v.Note, rep.Config)
		}
		if want == Dropped && !strings.Contains(v.Note, "refuses") {
			t.Errorf("%s: note %q", value, v.Note)
		}
	}
}
