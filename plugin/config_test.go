package plugin

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/pkg/types"

	"vpc-cni/settings"
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
	// Without the capability the runtime never passes the pod's annotations,
	// and no pod could pick a network profile.
	if caps, _ := conf["capabilities"].(map[string]any); caps[PodAnnotationsCapability] != true {
		t.Fatalf("the shipped conflist does not declare %s: %v", PodAnnotationsCapability, conf["capabilities"])
	}
}

// The conflist's configFile names the knobs' file; the verbs that act on
// the knobs resolve them as every vpc-cni process does (environment over
// file), and a bad value is code 7 naming the variable and its line.
func TestConfigFileKeyAndKnobs(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/config"
	if err := os.WriteFile(path, []byte("# node targets\nWARM_IP_TARGET=4\nIP_COOLDOWN_PERIOD=5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("IP_COOLDOWN_PERIOD", "7")
	c, err := ParseConfig([]byte(`{"name":"n","type":"vpc-cni","configFile":"` + path + `"}`))
	if err != nil {
		t.Fatal(err)
	}
	k, err := c.Knobs(settings.Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if k.Pool.WarmIPTarget != 4 || k.Value("WARM_IP_TARGET").Where != path+":2" || k.Pool.Cooldown != 7*time.Second {
		t.Fatalf("knobs %+v", k.Values)
	}
	three := 3
	if k, err := c.Knobs(settings.Overrides{WarmIP: &three}); err != nil || k.Pool.WarmIPTarget != 3 {
		t.Fatalf("the store's override must win: %+v %v", k.Pool, err)
	}

	if err := os.WriteFile(path, []byte("WARM_IP_TARGET=four\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err = ParseConfig([]byte(`{"name":"n","type":"vpc-cni","configFile":"` + path + `"}`))
	if err != nil {
		t.Fatalf("parsing must not fail on a knob (DEL never needs them): %v", err)
	}
	_, err = c.Knobs(settings.Overrides{})
	if codeOf(err) != types.ErrInvalidNetworkConfig || !strings.Contains(err.Error(), "WARM_IP_TARGET") || !strings.Contains(err.Error(), path+":1") {
		t.Fatalf("bad value: %v (code %d)", err, codeOf(err))
	}

	// A file group or others may write is refused: code 7, naming it and its mode.
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	c, err = ParseConfig([]byte(`{"name":"n","type":"vpc-cni","configFile":"` + path + `"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err = c.Knobs(settings.Overrides{}); codeOf(err) != types.ErrInvalidNetworkConfig || !strings.Contains(err.Error(), path) ||
		!strings.Contains(err.Error(), "mode 0666") {
		t.Fatalf("a world-writable file: %v (code %d)", err, codeOf(err))
	}

	c, err = ParseConfig([]byte(`{"name":"n","type":"vpc-cni","configFile":"` + dir + `/missing"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Knobs(settings.Overrides{}); codeOf(err) != types.ErrInvalidNetworkConfig || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("a named file that is missing: %v", err)
	}
}

func TestConfigFileFromTheEnvironmentAndTheDefault(t *testing.T) {
	t.Setenv("VPC_CNI_CONFIG", t.TempDir()+"/nope")
	c, err := ParseConfig([]byte(`{"name":"n","type":"vpc-cni"}`))
	if err != nil {
		t.Fatal(err)
	}
	if p, named := c.configFile(); !named || !strings.HasSuffix(p, "/nope") {
		t.Fatalf("configFile() = %s %v", p, named)
	}
	t.Setenv("VPC_CNI_CONFIG", "")
	if p, named := c.configFile(); named || p != settings.DefaultFile {
		t.Fatalf("configFile() = %s %v, want the default, not named", p, named)
	}
}
