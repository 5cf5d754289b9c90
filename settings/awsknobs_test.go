package settings

import (
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestAWSNodeKnobDefaults(t *testing.T) {
	e, err := Resolve(Overrides{}, Inputs{})
	if err != nil {
		t.Fatal(err)
	}
	if e.VethPrefix != "eni" || e.PodMTU != 9001 || !e.ManageUntaggedENI || len(e.AdditionalENITags) != 0 ||
		e.ExternalServiceCIDRs != nil || e.DisableLeakedENICleanup || e.DisableProvisioning || e.IMDSOnly ||
		e.DisablePodV6 || !e.BandwidthPlugin {
		t.Fatalf("defaults: %+v", e)
	}
	if !e.Provisioning() || !e.LeakSweep() {
		t.Fatal("provisioning and the sweep are on by default")
	}
	for _, k := range []string{ExternalServiceCIDRs, VethPrefix, PodMTU, ManageUntaggedENI, AdditionalENITags,
		DisableLeakedENICleanup, DisableProvisioning, IMDSOnlyMode, DisablePodV6, BandwidthPlugin} {
		if v := e.Value(k); v.Name != k || v.Source != FromDefault {
			t.Errorf("%s: %+v", k, v)
		}
	}
}

// POD_MTU follows AWS_VPC_ENI_MTU unless set itself.
func TestPodMTUDefaultsToTheENIMTU(t *testing.T) {
	e, err := Resolve(Overrides{}, Inputs{File: fileOf(t, "AWS_VPC_ENI_MTU=1500\n")})
	if err != nil || e.PodMTU != 1500 || e.Source(PodMTU) != FromDefault {
		t.Fatalf("pod MTU %d from %s: %v", e.PodMTU, e.Source(PodMTU), err)
	}
	e, err = Resolve(Overrides{}, Inputs{File: fileOf(t, "AWS_VPC_ENI_MTU=9001\nPOD_MTU=1280\n")})
	if err != nil || e.PodMTU != 1280 || e.Value(PodMTU).Where != "/etc/vpc-cni/config:2" {
		t.Fatalf("pod MTU %d %+v: %v", e.PodMTU, e.Value(PodMTU), err)
	}
}

func TestAWSNodeKnobsGoodValues(t *testing.T) {
	file := fileOf(t, strings.Join([]string{
		"AWS_EXTERNAL_SERVICE_CIDRS=10.100.0.0/16, 172.16.1.1/12,",
		"AWS_VPC_K8S_CNI_VETHPREFIX=pod",
		`ADDITIONAL_ENI_TAGS='{"team":"net","cost-centre":"42"}'`,
		"MANAGE_UNTAGGED_ENI=false",
		"DISABLE_LEAKED_ENI_CLEANUP=true",
		"DISABLE_NETWORK_RESOURCE_PROVISIONING=1",
		"DISABLE_POD_V6=true",
		"ENABLE_BANDWIDTH_PLUGIN=TRUE",
	}, "\n"))
	e, err := Resolve(Overrides{}, Inputs{File: file, Env: envOf(map[string]string{IMDSOnlyMode: "true", PodMTU: "8000"})})
	if err != nil {
		t.Fatal(err)
	}
	wantCIDRs := []netip.Prefix{netip.MustParsePrefix("10.100.0.0/16"), netip.MustParsePrefix("172.16.0.0/12")}
	if !slices.Equal(e.ExternalServiceCIDRs, wantCIDRs) || e.VethPrefix != "pod" || e.PodMTU != 8000 ||
		!reflect.DeepEqual(e.AdditionalENITags, map[string]string{"team": "net", "cost-centre": "42"}) ||
		e.ManageUntaggedENI || !e.DisableLeakedENICleanup || !e.DisableProvisioning || !e.IMDSOnly ||
		!e.DisablePodV6 || !e.BandwidthPlugin {
		t.Fatalf("resolved: %+v", e)
	}
	if e.Provisioning() || e.LeakSweep() {
		t.Fatal("provisioning off must stop the sweep too")
	}
	wants := map[string]Value{
		ExternalServiceCIDRs: {Value: "10.100.0.0/16,172.16.0.0/12", Source: FromFile, Where: "/etc/vpc-cni/config:1"},
		AdditionalENITags:    {Value: `{"cost-centre":"42","team":"net"}`, Source: FromFile, Where: "/etc/vpc-cni/config:3"},
		DisableProvisioning:  {Value: "true", Source: FromFile, Where: "/etc/vpc-cni/config:6"},
		IMDSOnlyMode:         {Value: "true", Source: FromEnv},
		PodMTU:               {Value: "8000", Source: FromEnv},
	}
	for k, w := range wants {
		w.Name = k
		if got := e.Value(k); got != w {
			t.Errorf("%s: %+v, want %+v", k, got, w)
		}
	}
}

// IMDS-only mode alone turns off provisioning and the sweep, as in aws-node.
func TestIMDSOnlyImpliesNoProvisioning(t *testing.T) {
	e, err := Resolve(Overrides{}, envIn(map[string]string{IMDSOnlyMode: "true"}))
	if err != nil || e.Provisioning() || e.LeakSweep() || e.DisableProvisioning {
		t.Fatalf("%+v %v", e, err)
	}
	e, err = Resolve(Overrides{}, envIn(map[string]string{DisableLeakedENICleanup: "true"}))
	if err != nil || !e.Provisioning() || e.LeakSweep() {
		t.Fatalf("%+v %v", e, err)
	}
}

func TestAWSNodeKnobsBadValues(t *testing.T) {
	cases := []struct{ line, want string }{
		{"AWS_EXTERNAL_SERVICE_CIDRS=10.0.0.0/8,fd00::/8", `"fd00::/8" is not an IPv4 CIDR`},
		{"AWS_EXTERNAL_SERVICE_CIDRS=10.0.0.0", `"10.0.0.0" is not an IPv4 CIDR`},
		{"AWS_VPC_K8S_CNI_VETHPREFIX=abcde", "at most 4 characters"},
		{"AWS_VPC_K8S_CNI_VETHPREFIX=eth", "eth, lo and vlan"},
		{"AWS_VPC_K8S_CNI_VETHPREFIX=lo", "eth, lo and vlan"},
		{"AWS_VPC_K8S_CNI_VETHPREFIX=vlan", "eth, lo and vlan"},
		{"AWS_VPC_K8S_CNI_VETHPREFIX=a/b", "cannot be in an interface name"},
		{"POD_MTU=575", "out of range, must be 576..9001"},
		{"POD_MTU=9002", "out of range, must be 576..9001"},
		{"POD_MTU=jumbo", "not an integer"},
		{"MANAGE_UNTAGGED_ENI=yes", "not a boolean"},
		{`ADDITIONAL_ENI_TAGS={"team":`, "not a JSON object of strings"},
		{`ADDITIONAL_ENI_TAGS={"n":1}`, "not a JSON object of strings"},
		{`ADDITIONAL_ENI_TAGS={"node.k8s.amazonaws.com/no_manage":"true"}`, `tag "node.k8s.amazonaws.com/no_manage": keys containing k8s.amazonaws.com`},
		{`ADDITIONAL_ENI_TAGS={"aws:x":"y"}`, "keys starting aws:"},
		{"DISABLE_LEAKED_ENI_CLEANUP=off", "not a boolean"},
		{"DISABLE_NETWORK_RESOURCE_PROVISIONING=2", "not a boolean"},
		{"ENABLE_IMDS_ONLY_MODE=on", "not a boolean"},
		{"DISABLE_POD_V6=no", "not a boolean"},
		{"ENABLE_BANDWIDTH_PLUGIN=enabled", "not a boolean"},
	}
	for _, c := range cases {
		key, _, _ := strings.Cut(c.line, "=")
		_, err := Resolve(Overrides{}, Inputs{File: fileOf(t, "# aws-node\n"+c.line+"\n")})
		for _, w := range []string{key + "=", "file /etc/vpc-cni/config:2", c.want} {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: err = %v, want one with %q", c.line, err, w)
			}
		}
		// The same value in the environment says so.
		_, val, _ := strings.Cut(c.line, "=")
		_, err = Resolve(Overrides{}, envIn(map[string]string{key: strings.Trim(val, "'")}))
		if err == nil || !strings.Contains(err.Error(), "(env)") {
			t.Errorf("%s in the environment: err = %v", c.line, err)
		}
	}
}

// aws-node's variables that this design answers another way are refused
// with the equivalent named, never as an unknown key.
func TestAWSNodeVariablesAnsweredDifferently(t *testing.T) {
	cases := map[string][]string{
		"AWS_VPC_K8S_CNI_LOGLEVEL":      {"is aws-node's", "VPC_CNI_LOG_LEVEL", "instead"},
		"AWS_VPC_K8S_CNI_LOG_FILE":      {"is aws-node's", "stderr"},
		"AWS_VPC_K8S_PLUGIN_LOG_FILE":   {"is aws-node's", `"logFile"`},
		"AWS_VPC_K8S_PLUGIN_LOG_LEVEL":  {"is aws-node's", `"logLevel"`},
		"INTROSPECTION_BIND_ADDRESS":    {"no introspection endpoint", "vpcctl pool status -o json"},
		"DISABLE_INTROSPECTION":         {"no introspection endpoint"},
		"DISABLE_METRICS":               {"metrics.bind=off"},
		"AWS_VPC_K8S_CNI_BACKING_STORE": {"state.db", "VPC_CNI_STATE_DIR"},
		"AWS_EC2_ENDPOINT":              {"AWS_ENDPOINT_URL_EC2"},
		"ENI_CONFIG_LABEL_DEF":          {"ENI_CONFIG_<ZONE>"},
		"ENABLE_NFTABLES":               {"nftables"},
	}
	for key, wants := range cases {
		_, err := ParseFile("/etc/vpc-cni/config", []byte("\n"+key+"=x\n"))
		if err == nil || strings.Contains(err.Error(), "unknown key") || !strings.Contains(err.Error(), "/etc/vpc-cni/config:2") {
			t.Errorf("%s: err = %v", key, err)
			continue
		}
		for _, w := range wants {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v lacks %q", key, err, w)
			}
		}
	}
}

func TestAWSNodeVariablesNotYetHonoured(t *testing.T) {
	for _, key := range []string{"ENABLE_POD_ENI", "ENABLE_MULTI_NIC",
		"ANNOTATE_POD_IP", "AWS_MANAGE_ENIS_NON_SCHEDULABLE", "DISABLE_TCP_EARLY_DEMUX"} {
		_, err := ParseFile("/etc/vpc-cni/config", []byte(key+"=true\n"))
		if err == nil || !strings.Contains(err.Error(), key+" is aws-node's, and vpc-cni cannot honour it yet") ||
			!strings.Contains(err.Error(), "remove it") {
			t.Errorf("%s: err = %v", key, err)
		}
	}
}

// The table is the one place migrate reads: every carried variable is a
// file key, no refused one is, and each refusal says what to do.
func TestAWSNodeTableAgreesWithTheFileKeys(t *testing.T) {
	seen := map[string]bool{}
	for _, v := range AWSNodeVars {
		if seen[v.Name] {
			t.Errorf("%s twice in the table", v.Name)
		}
		seen[v.Name] = true
		inFile := slices.Contains(FileKeys, v.Name)
		switch v.Fate {
		case Carried:
			if !inFile || v.Instead != "" {
				t.Errorf("carried %s: in FileKeys %v, instead %q", v.Name, inFile, v.Instead)
			}
		case Answered, NotYet:
			if inFile || v.Instead == "" {
				t.Errorf("%s %s: in FileKeys %v, instead %q", v.Fate, v.Name, inFile, v.Instead)
			}
		default:
			t.Errorf("%s: fate %q", v.Name, v.Fate)
		}
	}
	for _, k := range []string{ExternalServiceCIDRs, VethPrefix, PodMTU, ManageUntaggedENI, AdditionalENITags,
		DisableLeakedENICleanup, DisableProvisioning, IMDSOnlyMode, DisablePodV6, BandwidthPlugin} {
		if v, ok := LookupAWSNodeVar(k); !ok || v.Fate != Carried {
			t.Errorf("%s: %+v %v", k, v, ok)
		}
	}
}

// An aws-node-looking name that is not in the table is a misspelt knob
// (with a suggestion), not an AWS SDK variable.
func TestMisspeltAWSVPCKeyGetsASuggestion(t *testing.T) {
	_, err := ParseFile("/etc/vpc-cni/config", []byte("AWS_VPC_K8S_CNI_VETHPREFX=eni\n"))
	if err == nil || !strings.Contains(err.Error(), "did you mean AWS_VPC_K8S_CNI_VETHPREFIX") {
		t.Fatalf("err = %v", err)
	}
	_, err = ParseFile("/etc/vpc-cni/config", []byte("AWS_REGION=us-west-2\n"))
	if err == nil || !strings.Contains(err.Error(), "from the environment") {
		t.Fatalf("AWS_REGION: err = %v", err)
	}
}
