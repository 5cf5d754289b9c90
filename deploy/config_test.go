package deploy

import (
	"strings"
	"testing"

	"vpc-cni/settings"
)

// The example names every key the configuration file accepts, and its
// commented values, uncommented, are a valid configuration.
func TestConfigExampleListsEveryKnob(t *testing.T) {
	for _, k := range settings.FileKeys {
		if !strings.Contains(ConfigExample, "\n#"+k+"=") {
			t.Errorf("config.example lacks %s", k)
		}
	}
	var lines []string
	for _, l := range strings.Split(ConfigExample, "\n") {
		if kv, ok := strings.CutPrefix(l, "#"); ok && strings.Contains(kv, "=") && !strings.Contains(kv, " ") {
			lines = append(lines, kv)
		}
	}
	f, err := settings.ParseFile("config.example", []byte(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatalf("the example's values do not parse: %v", err)
	}
	if _, err := settings.Resolve(settings.Overrides{}, settings.Inputs{File: f}); err != nil {
		t.Fatalf("the example's values are not a valid configuration: %v", err)
	}
}
