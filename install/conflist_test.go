package install

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"

	"vpc-cni/settings"
	"vpc-cni/store"
)

// The shipped conflist is what install writes with both chained plugins present.
func TestShippedConflistIsWhatInstallWrites(t *testing.T) {
	in := &installer{Layout: Layout{StateDir: store.DefaultDir, Config: "/etc/vpc-cni/config"}}
	got, _ := in.conflistFor(nil, func(string) bool { return true })
	shipped, err := os.ReadFile("../deploy/10-vpc-cni.conflist")
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if err := json.Unmarshal(got, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(shipped, &b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("deploy/10-vpc-cni.conflist differs from install's:\n%s", got)
	}
}

// DISABLE_POD_V6 chains tuning with aws-node's sysctls; ENABLE_BANDWIDTH_PLUGIN
// set to false drops bandwidth (unset keeps it).
func TestConflistFollowsAWSNodesPluginKnobs(t *testing.T) {
	in := &installer{Layout: Layout{StateDir: store.DefaultDir, Config: "/etc/vpc-cni/config"}}
	types := func(text string) []string {
		f, err := settings.ParseFile("config", []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		got, missing := in.conflistWith(nil, f, func(string) bool { return true })
		var doc struct{ Plugins []map[string]any }
		if err := json.Unmarshal(got, &doc); err != nil || len(missing) != 0 {
			t.Fatalf("%v %v", err, missing)
		}
		var out []string
		for _, p := range doc.Plugins {
			out = append(out, p["type"].(string))
			if p["type"] == "tuning" {
				sysctl, _ := p["sysctl"].(map[string]any)
				if sysctl["net.ipv6.conf.all.disable_ipv6"] != "1" || sysctl["net.ipv6.conf.lo.disable_ipv6"] != "1" {
					t.Errorf("tuning's sysctls %v; want IPv6 off in the pod", sysctl)
				}
			}
			if p["type"] == "bandwidth" && !reflect.DeepEqual(p["capabilities"], map[string]any{"bandwidth": true}) {
				t.Errorf("bandwidth's capabilities %v", p["capabilities"])
			}
		}
		return out
	}
	cases := []struct {
		file string
		want []string
	}{
		{"", []string{"vpc-cni", "portmap", "bandwidth"}},
		{"ENABLE_BANDWIDTH_PLUGIN=true\n", []string{"vpc-cni", "portmap", "bandwidth"}},
		{"ENABLE_BANDWIDTH_PLUGIN=false\n", []string{"vpc-cni", "portmap"}},
		{"DISABLE_POD_V6=true\nENABLE_BANDWIDTH_PLUGIN=false\n", []string{"vpc-cni", "portmap", "tuning"}},
		{"DISABLE_POD_V6=true\n", []string{"vpc-cni", "portmap", "bandwidth", "tuning"}},
	}
	for _, c := range cases {
		if got := types(c.file); !reflect.DeepEqual(got, c.want) {
			t.Errorf("config %q: plugins %v, want %v", c.file, got, c.want)
		}
	}
}
