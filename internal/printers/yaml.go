package printers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
)

// WriteYAML prints v as YAML with the field names of its JSON form. Strings
// are double-quoted JSON strings, which YAML reads as they are, so no quoting
// rule can be got wrong. (A YAML library would cost every plugin run its
// package initialisation, since the CLI and the plugin are one binary.)
func WriteYAML(w io.Writer, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return err
	}
	var b strings.Builder
	yamlNode(&b, tree, 0)
	_, err = io.WriteString(w, b.String())
	return err
}

func yamlNode(b *strings.Builder, v any, indent int) {
	pad := strings.Repeat("  ", indent)
	switch t := v.(type) {
	case map[string]any:
		if len(t) == 0 {
			b.WriteString(pad + "{}\n")
			return
		}
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			yamlEntry(b, pad+yamlKey(k)+":", t[k], indent)
		}
	case []any:
		if len(t) == 0 {
			b.WriteString(pad + "[]\n")
			return
		}
		for _, item := range t {
			yamlEntry(b, pad+"-", item, indent)
		}
	default:
		b.WriteString(pad + yamlScalar(t) + "\n")
	}
}

// yamlEntry writes "key:" or "-" and its value, inline when it is a scalar
// or empty, as an indented block otherwise.
func yamlEntry(b *strings.Builder, head string, v any, indent int) {
	switch t := v.(type) {
	case map[string]any:
		if len(t) > 0 {
			b.WriteString(head + "\n")
			yamlNode(b, t, indent+1)
			return
		}
		b.WriteString(head + " {}\n")
	case []any:
		if len(t) > 0 {
			b.WriteString(head + "\n")
			yamlNode(b, t, indent+1)
			return
		}
		b.WriteString(head + " []\n")
	default:
		b.WriteString(head + " " + yamlScalar(t) + "\n")
	}
}

// yamlKey leaves plain field names bare, as kubectl prints them, and quotes
// anything YAML could read as something else.
func yamlKey(k string) string {
	plain := k != "" && !strings.ContainsAny(k[:1], "0123456789-.")
	for _, c := range k {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			plain = false
		}
	}
	switch strings.ToLower(k) {
	case "y", "n", "yes", "no", "true", "false", "on", "off", "null":
		plain = false
	}
	if plain {
		return k
	}
	return yamlScalar(k)
}

func yamlScalar(v any) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case string:
		q, _ := json.Marshal(t)
		return string(q)
	case json.Number:
		return t.String()
	case bool:
		return fmt.Sprint(t)
	}
	return fmt.Sprintf("%q", fmt.Sprint(v))
}
