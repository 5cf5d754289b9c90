package commands

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// `pool status` fits a screen: one KNOBS line saying how many knobs are set
// and where to see them all; -o wide has the knob table; -o json every knob.
func TestPoolStatusKnobsBehindWide(t *testing.T) {
	_, env := newSim(t, "m5.large")
	dir := t.TempDir()
	cfg := writeConfig(t, "WARM_IP_TARGET=3\n")
	vpc(t, env, "--config", cfg, "--state-dir", dir, "reconcile").want(t, 0)
	env = with(env, "MINIMUM_IP_TARGET=4")

	r := vpc(t, env, "--config", cfg, "--state-dir", dir, "pool", "status")
	r.want(t, 0, "CONFIG FILE", "KNOBS", " knobs set (file, env or store)", "1 from the last pass",
		"vpcctl pool status -o wide shows every knob")
	if strings.Contains(r.stdout, "LAST PASS") || strings.Contains(r.stdout, "RELEASE_DELAY") {
		t.Errorf("the default table lists the knobs:\n%s", r.stdout)
	}
	if n := strings.Count(r.stdout, "\n"); n > 30 {
		t.Errorf("the default table of a fresh node is %d lines:\n%s", n, r.stdout)
	}

	wide := vpc(t, env, "--config", cfg, "--state-dir", dir, "pool", "status", "-o", "wide")
	wide.want(t, 0, "KNOB", "LAST PASS", "RELEASE_DELAY", "file "+cfg+":1")

	var view struct {
		Knobs []struct {
			Name, Source string
		} `json:"knobs"`
	}
	js := vpc(t, env, "--config", cfg, "--state-dir", dir, "pool", "status", "-o", "json")
	js.want(t, 0)
	if err := json.Unmarshal([]byte(js.stdout), &view); err != nil {
		t.Fatal(err)
	}
	set := 0
	for _, k := range view.Knobs {
		if k.Source != "default" {
			set++
		}
		if !strings.Contains(wide.stdout, k.Name) {
			t.Errorf("-o wide lacks %s", k.Name)
		}
	}
	if len(view.Knobs) < 20 || !strings.Contains(r.stdout, "KNOBS") ||
		!strings.Contains(r.stdout, fmt.Sprintf("%d of %d knobs set", set, len(view.Knobs))) {
		t.Errorf("json has %d knobs, %d set; the table says:\n%s", len(view.Knobs), set, r.stdout)
	}
}
