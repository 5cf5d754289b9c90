package migrate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
	yamlv2 "sigs.k8s.io/yaml/goyaml.v2"
)

// theirDocs is what sigs.k8s.io/yaml (the YAML of kubectl and client-go)
// reads from data: each document, as JSON values.
func theirDocs(data []byte) ([]any, error) {
	dec := yamlv2.NewDecoder(bytes.NewReader(data))
	var out []any
	for {
		var doc any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if doc == nil {
			continue
		}
		y, err := yamlv2.Marshal(doc)
		if err != nil {
			return nil, err
		}
		j, err := yaml.YAMLToJSON(y)
		if err != nil {
			return nil, err
		}
		var v any
		if err := json.Unmarshal(j, &v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
}

// resolved is what YAML makes of a plain scalar on its own: a string, a
// number, a bool or null, as JSON gives it.
func resolved(text string) (any, bool) {
	if strings.ContainsAny(text, "\n") {
		return nil, false
	}
	j, err := yaml.YAMLToJSON([]byte("k: " + text))
	var m map[string]any
	if err != nil || json.Unmarshal(j, &m) != nil {
		return nil, false
	}
	v, ok := m["k"]
	return v, ok
}

// resolvedKey is the JSON key sigs.k8s.io/yaml makes of a plain key
// ("1000000", "true"); the text itself when it cannot say.
func resolvedKey(text string) string {
	j, err := yaml.YAMLToJSON([]byte(text + ": 0"))
	var m map[string]any
	if err != nil || json.Unmarshal(j, &m) != nil || len(m) != 1 {
		return text
	}
	for k := range m {
		return k
	}
	return text
}

// sameNode says where our node and theirs differ ("" when they agree). An
// unread node agrees with anything: the reader says it did not read it.
func sameNode(path string, ours, theirs any) string {
	switch o := ours.(type) {
	case unreadYAML:
		return ""
	case nil:
		if theirs != nil {
			return fmt.Sprintf("%s: null here, %#v there", path, theirs)
		}
	case yamlScalar:
		if s, ok := theirs.(string); ok && (s == o.Text) {
			return ""
		}
		if v, ok := resolved(o.Text); o.Plain && ok && reflect.DeepEqual(v, theirs) {
			return ""
		}
		return fmt.Sprintf("%s: %#v here, %#v there", path, o, theirs)
	case []any:
		t, ok := theirs.([]any)
		if !ok || len(t) != len(o) {
			return fmt.Sprintf("%s: a sequence of %d here, %#v there", path, len(o), theirs)
		}
		for i := range o {
			if d := sameNode(fmt.Sprintf("%s[%d]", path, i), o[i], t[i]); d != "" {
				return d
			}
		}
	case yamlMap:
		return sameMap(path, o, theirs)
	default:
		return fmt.Sprintf("%s: %T here", path, ours)
	}
	return ""
}

func sameMap(path string, o yamlMap, theirs any) string {
	keys := make([]string, len(o))
	seen := map[string]bool{}
	for i, kv := range o {
		keys[i] = kv.Key.Text
		if kv.Key.Plain {
			keys[i] = resolvedKey(kv.Key.Text)
		}
		if seen[keys[i]] {
			return "" // "0" and "00": one key to YAML, which keeps the last; strict decoding refuses it
		}
		seen[keys[i]] = true
	}
	t, ok := theirs.(map[string]any)
	if !ok || len(t) != len(o) {
		return fmt.Sprintf("%s: a mapping of %d here, %#v there", path, len(o), theirs)
	}
	for i, kv := range o {
		key := keys[i]
		tv, ok := t[key]
		if !ok {
			return fmt.Sprintf("%s: key %q here, not there (%v)", path, key, t)
		}
		if d := sameNode(path+"."+key, kv.Val, tv); d != "" {
			return d
		}
	}
	return ""
}

// differ says how this reader and sigs.k8s.io/yaml read data differently:
// where sigs.k8s.io/yaml reads a stream, this reader reads the same, marks
// a node unread, or refuses it; "" when that holds.
func differ(data []byte) string {
	theirs, terr := theirDocs(data)
	ours, err := parseYAMLNodes(data)
	if terr != nil || err != nil {
		return ""
	}
	for _, d := range ours {
		if _, ok := d.(unreadYAML); ok {
			return "" // "&a" alone is a null document to YAML: the documents no longer pair up
		}
	}
	if len(ours) != len(theirs) {
		return fmt.Sprintf("%d documents here, %d there", len(ours), len(theirs))
	}
	for i := range ours {
		if d := sameNode(fmt.Sprintf("doc%d", i), ours[i], theirs[i]); d != "" {
			return d
		}
	}
	return ""
}

func yamlSeeds(t testing.TB) [][]byte {
	var out [][]byte
	files, _ := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	ref, _ := filepath.Glob(filepath.Join("testdata", "reference", "*.yaml"))
	for _, f := range append(files, ref...) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, data)
	}
	for _, s := range []string{
		"a:\n- b: 'x\n  c: |\n",
		"securityContext:\n  {}\nb: []\n",
		"a: \"x\\ty\\u00e9 \\\n  z\"\nb: 'it''s\n\n  folded'\n",
		"- - - x\n  - y\n- {a: 1, b: [c, \"d\"], e: }\n",
		"k: >-\n  one\n  two\n\n  three\nl: |+\n  keep\n\nm: x\n",
		"a: 1\n---\nb: true\n...\n--- # c\n- ~\n- null\n- 0x10\n",
		"plain: a\n  continued # comment\nn: 12.5\ny: yes\n",
		"&a x: *a\n",
	} {
		out = append(out, []byte(s))
	}
	return out
}

// The seeds (the reference's manifests, its chart's output, kubectl's
// shape) read as sigs.k8s.io/yaml reads them, and this reader refuses none.
func TestYAMLReaderAgreesWithSigsYAMLOnTheSeeds(t *testing.T) {
	for i, data := range yamlSeeds(t) {
		if d := differ(data); d != "" {
			t.Errorf("seed %d: %s", i, d)
		}
	}
	for _, f := range referenceFiles(t) {
		if _, err := parseYAMLNodes(f.data); err != nil {
			t.Errorf("%s: %v", f.name, err)
		}
	}
}

// FuzzYAMLReaderAgreesWithSigsYAML: go test -fuzz FuzzYAMLReaderAgreesWithSigsYAML ./migrate/
func FuzzYAMLReaderAgreesWithSigsYAML(f *testing.F) {
	for _, s := range yamlSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 8<<10 {
			return
		}
		if d := differ(data); d != "" {
			t.Fatalf("%q: %s", data, d)
		}
		_, _ = parseDaemonSet(data)
	})
}

// nested48K is items nested in items, 48 KB of them: a reader quadratic
// in nested items takes 12 s over it.
func nested48K() []byte {
	item := "- a: bbbbbbbbbb\n  c:\n  - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - d\n"
	return []byte(strings.Repeat("- ", 150) + "x\n" + strings.Repeat(item, 48<<10/len(item)))
}

// A deep nest is refused at maxYAMLDepth with a line, not recursed into.
func TestYAMLReaderRefusesDeepNesting(t *testing.T) {
	_, err := parseYAMLNodes([]byte(strings.Repeat("- ", 24<<10) + "x\n"))
	if err == nil || !strings.Contains(err.Error(), "nested deeper than") {
		t.Fatalf("24,576 nested items: %v", err)
	}
	if _, err := parseYAMLNodes(nested48K()); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkYAMLReader48K: a reader quadratic in nested items takes 12 s
// over 48 KB of them; this one reads each line once.
func BenchmarkYAMLReader48K(b *testing.B) {
	for name, data := range map[string][]byte{
		"nested-items":      nested48K(),
		"deep-refused":      []byte(strings.Repeat("- ", 24<<10) + "x\n"),
		"kubectl-daemonset": mustRead(b, "testdata/reference/kubectl-get-ds-aws-node-v1.23.1.yaml"),
	} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				_, _ = parseYAMLNodes(data)
			}
		})
	}
}

func mustRead(tb testing.TB, path string) []byte {
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}
