package settings

import (
	"strings"
	"testing"

	"vpc-cni/pool"
)

func TestFamilyKnobDefaults(t *testing.T) {
	e, err := Resolve(Overrides{}, Inputs{})
	if err != nil {
		t.Fatal(err)
	}
	c := e.Pool
	if c.IPv6 || c.IPv4Off || !c.V4Egress || c.V6Egress || c.Family() != pool.FamilyIPv4 {
		t.Fatalf("defaults: %+v", c)
	}
	for _, k := range []string{EnableIPv6, EnableIPv4, EnableV4Egress, EnableV6Egress} {
		if v := e.Value(k); v.Source != FromDefault {
			t.Errorf("%s: %+v", k, v)
		}
	}
	if e.Value(EnableIPv4).Value != "true" || e.Value(EnableV4Egress).Value != "true" || e.Value(EnableIPv6).Value != "false" {
		t.Fatalf("default texts: %+v", e.Values)
	}
}

func TestFamilyModes(t *testing.T) {
	e, err := Resolve(Overrides{}, Inputs{File: fileOf(t, "ENABLE_IPv6=true\nENABLE_IPv4=false\nENABLE_PREFIX_DELEGATION=true\n")})
	if err != nil || e.Pool.Family() != pool.FamilyIPv6 || e.Value(EnableIPv6).Source != FromFile {
		t.Fatalf("IPv6 only: %+v %v", e.Pool, err)
	}
	e, err = Resolve(Overrides{}, Inputs{File: fileOf(t, "ENABLE_IPv6=true\n"),
		Env: envOf(map[string]string{EnableV6Egress: "true"})})
	if err != nil || e.Pool.Family() != pool.FamilyDualStack || !e.Pool.V6Egress || e.Value(EnableV6Egress).Source != FromEnv {
		t.Fatalf("dual stack: %+v %v", e.Pool, err)
	}
}

// Each refused combination names the knob to fix and where it was set.
func TestFamilyRefusals(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"ENABLE_IPv4=false\n", "ENABLE_IPv4=false (file /etc/vpc-cni/config:1) and ENABLE_IPv6=false (default): pods would get no address"},
		{"ENABLE_IPv6=true\nENABLE_IPv4=false\n", "needs ENABLE_PREFIX_DELEGATION=true"},
		{"ENABLE_IPv6=true\nENABLE_IPv4=false\nENABLE_PREFIX_DELEGATION=true\nAWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG=true\nENI_CONFIG_US_EAST_1A=subnet=subnet-1\n",
			"cannot be used with custom networking, AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG=true"},
		{"ENABLE_IPv6=true\nAWS_VPC_ENI_MTU=1200\n", "needs AWS_VPC_ENI_MTU of at least 1280"},
		{"ENABLE_IPv6=true\nPOD_MTU=1000\n", "needs POD_MTU of at least 1280 (IPv6's minimum), got POD_MTU=1000 (file /etc/vpc-cni/config:2)"},
		{"ENABLE_IPv6=maybe\n", `ENABLE_IPv6="maybe"`},
	} {
		f, err := ParseFile("/etc/vpc-cni/config", []byte(tc.file))
		if err != nil {
			t.Errorf("%q: %v", tc.file, err)
			continue
		}
		_, err = Resolve(Overrides{}, Inputs{File: f})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %q", tc.file, err, tc.want)
		}
	}
	// IPv4 pods accept the MTUs they always did.
	if _, err := Resolve(Overrides{}, Inputs{File: fileOf(t, "AWS_VPC_ENI_MTU=1200\n")}); err != nil {
		t.Fatal(err)
	}
}
