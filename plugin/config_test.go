package plugin

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/pkg/types"
)

func codeOf(err error) uint {
	var te *types.Error
	if errors.As(err, &te) {
		return te.Code
	}
	return 0
}

func TestParseConfigAsInterfacePlugin(t *testing.T) {
	c, err := ParseConfig([]byte(`{"cniVersion":"1.1.0","name":"vpc","type":"vpc-cni","mtu":1500,
		"stateDir":"/s","inlineGrow":false,"timeouts":{"add":"5s","del":3}}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Delegate || c.MTU != 1500 || c.StateDir != "/s" || c.inlineGrow() || !c.backgroundReconcile() {
		t.Fatalf("parsed %+v", c)
	}
	if c.Timeouts.Add.Duration != 5*time.Second || c.Timeouts.Del.Duration != 3*time.Second || c.Timeouts.Status.Duration != 2*time.Second {
		t.Fatalf("timeouts %+v", c.Timeouts)
	}
}

func TestParseConfigAsIPAMDelegateReadsTheIPAMObject(t *testing.T) {
	c, err := ParseConfig([]byte(`{"cniVersion":"1.0.0","name":"n","type":"ptp","mtu":1400,
		"ipam":{"type":"vpc-cni","stateDir":"/ipam-state"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Delegate || c.StateDir != "/ipam-state" || c.MTU != DefaultMTU {
		t.Fatalf("parsed %+v: want delegate with the ipam object's keys only", c)
	}
}

func TestParseConfigErrorsNameTheProblem(t *testing.T) {
	cases := []struct {
		name, conf string
		code       uint
		want       string
	}{
		{"malformed", `{"name":`, types.ErrDecodingFailure, "malformed"},
		{"wrong type", `{"name":"n","type":"vpc-cni","mtu":"big"}`, types.ErrInvalidNetworkConfig, `"mtu"`},
		{"wrong type in ipam", `{"name":"n","type":"ptp","ipam":{"type":"vpc-cni","stateDir":7}}`, types.ErrInvalidNetworkConfig, "stateDir"},
		{"mtu range", `{"name":"n","type":"vpc-cni","mtu":100}`, types.ErrInvalidNetworkConfig, "mtu 100"},
		{"no name", `{"type":"vpc-cni"}`, types.ErrInvalidNetworkConfig, "network name"},
		{"log level", `{"name":"n","type":"vpc-cni","logLevel":"loud"}`, types.ErrInvalidNetworkConfig, "logLevel"},
		{"timeout", `{"name":"n","type":"vpc-cni","timeouts":{"add":"-1s"}}`, types.ErrInvalidNetworkConfig, "duration"},
		{"delegate without ipam", `{"name":"n","type":"ptp"}`, types.ErrInvalidNetworkConfig, "ipam"},
	}
	for _, tc := range cases {
		_, err := ParseConfig([]byte(tc.conf))
		if codeOf(err) != tc.code || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v (code %d), want code %d naming %q", tc.name, err, codeOf(err), tc.code, tc.want)
		}
	}
}

func TestParsePodArgs(t *testing.T) {
	p, err := parsePodArgs("IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=web;K8S_POD_UID=u1")
	if err != nil || p != (podArgs{"ns", "web", "u1"}) {
		t.Fatalf("got %+v, %v", p, err)
	}
	if _, err := parsePodArgs("K8S_POD_NAME"); codeOf(err) != types.ErrInvalidEnvironmentVariables {
		t.Fatalf("a pair without = must be code 4, got %v", err)
	}
}

// FuzzParseConfig: any input either parses into a usable configuration or
// fails with a CNI error; it never panics.
func FuzzParseConfig(f *testing.F) {
	f.Add(`{"cniVersion":"1.1.0","name":"vpc","type":"vpc-cni"}`)
	f.Add(`{"name":"n","type":"ptp","ipam":{"type":"vpc-cni"}}`)
	f.Add(`{"name":"n","type":"vpc-cni","timeouts":{"add":1}}`)
	f.Fuzz(func(t *testing.T, conf string) {
		c, err := ParseConfig([]byte(conf))
		if err != nil {
			if codeOf(err) == 0 {
				t.Fatalf("error without a CNI code: %v", err)
			}
			return
		}
		if c.Network == "" || c.MTU < 576 || c.Timeouts.Add.Duration <= 0 || c.StateDir == "" {
			t.Fatalf("accepted an unusable configuration: %+v", c)
		}
	})
}

// TestShippedConflistParses keeps deploy/10-vpc-cni.conflist honest.
func TestShippedConflistParses(t *testing.T) {
	raw, err := os.ReadFile("../deploy/10-vpc-cni.conflist")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		CNIVersion string           `json:"cniVersion"`
		Name       string           `json:"name"`
		Plugins    []map[string]any `json:"plugins"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatal(err)
	}
	conf := list.Plugins[0]
	conf["cniVersion"], conf["name"] = list.CNIVersion, list.Name // as libcni injects them
	b, _ := json.Marshal(conf)
	c, err := ParseConfig(b)
	if err != nil {
		t.Fatal(err)
	}
	if c.Delegate || !c.inlineGrow() || c.Timeouts.Add.Duration != 60*time.Second {
		t.Fatalf("parsed %+v", c)
	}
}
