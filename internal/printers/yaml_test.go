package printers

import (
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// WriteYAML's output must read back (with a real YAML parser, test-only) as
// the same document as the JSON form.
func TestWriteYAMLReadsBackAsTheJSON(t *testing.T) {
	v := map[string]any{
		"name": "pool", "count": 3, "ratio": 0.5, "ok": true, "none": nil,
		"tricky": []string{"yes", "no", "1.0", "a: b", "- x", "#c", "", "quote\"d", "multi\nline", "ünï"},
		"nested": map[string]any{"list": []any{map[string]any{"a": 1}, []int{}, map[string]any{}}, "empty": map[string]any{}},
		"status": struct {
			ENIs  []string `json:"enis"`
			Knobs []string `json:"knobs"`
			Took  Duration `json:"took"`
		}{ENIs: []string{}, Took: Duration(1500)},
		"yes": 1, "1st": 2, "a b": 3, "x:y": 4, "": 5, "Null": 6,
	}
	var b strings.Builder
	if err := WriteYAML(&b, v); err != nil {
		t.Fatal(err)
	}
	fromYAML, err := yaml.YAMLToJSON([]byte(b.String()))
	if err != nil {
		t.Fatalf("not YAML: %v\n%s", err, b.String())
	}
	want, _ := json.Marshal(v)
	var got, exp any
	_ = json.Unmarshal(fromYAML, &got)
	_ = json.Unmarshal(want, &exp)
	gotJSON, _ := json.Marshal(got)
	expJSON, _ := json.Marshal(exp)
	if string(gotJSON) != string(expJSON) {
		t.Fatalf("round trip differs:\n got %s\nwant %s\nyaml:\n%s", gotJSON, expJSON, b.String())
	}
}
