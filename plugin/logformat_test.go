package plugin

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/types"
)

// logLines runs an ADD and a DEL of c1 with extra conflist keys and
// returns the plugin log's lines.
func logLines(t *testing.T, extra map[string]any) []string {
	n := newTestNode(t).seed(twoENIs, eni(0, "100.64.0.10"))
	for _, verb := range []string{"ADD", "DEL"} {
		if _, err := n.run(verb, n.args("c1", n.conf("1.1.0", extra))); err != nil {
			t.Fatalf("%s: %v", verb, err)
		}
	}
	data, err := os.ReadFile(filepath.Join(n.dir, "plugin.log"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) < 2 {
		t.Fatalf("the log has %d lines: %q", len(lines), data)
	}
	return lines
}

// logFormat json makes every line of the plugin's log one slog JSON
// object with the verb and container; text (the default) stays key=value.
func TestPluginLogFormat(t *testing.T) {
	for _, l := range logLines(t, map[string]any{"logFormat": "json"}) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil || rec["msg"] == nil || rec["verb"] == nil || rec["container"] != "c1" {
			t.Errorf("not a JSON record with msg, verb and container: %q (%v)", l, err)
		}
	}
	for _, l := range logLines(t, nil) {
		if !strings.HasPrefix(l, "time=") || strings.Contains(l, `"msg":`) {
			t.Errorf("not a text record: %q", l)
		}
	}
}

// A logFormat the plugin does not write is refused with code 7, naming it.
func TestPluginLogFormatRefused(t *testing.T) {
	_, err := ParseConfig([]byte(`{"name":"n","type":"vpc-cni","logFormat":"xml"}`))
	if codeOf(err) != types.ErrInvalidNetworkConfig || !strings.Contains(err.Error(), `logFormat "xml": must be text or json`) {
		t.Errorf("err = %v (code %d)", err, codeOf(err))
	}
}
