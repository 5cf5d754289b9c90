package deploy

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"sigs.k8s.io/yaml"

	"vpc-cni/settings"
)

var updateKnobs = flag.Bool("update-knobs", false,
	"add the registry's knobs missing from config.example, the chart's values and its profile fields (make knobs)")

// exampleKey is the config example's line of a key: node keys as they
// are, a profile's as the example profile GOLD's.
func exampleKey(k settings.Knob, profile bool) string {
	if profile {
		return "#" + settings.ProfileKey("gold", k.Name) + "="
	}
	return "#" + k.Name + "="
}

// exampleKeys lists the example's key lines in the registry's order.
func exampleKeys() (keys []string, rows []settings.Knob) {
	for _, profile := range []bool{false, true} {
		for _, k := range settings.Registry {
			if profile && k.ProfileKey() || !profile && k.NodeKey() {
				keys, rows = append(keys, exampleKey(k, profile)), append(rows, k)
			}
		}
	}
	return keys, rows
}

// lineOf is the index of the line starting with prefix, or -1.
func lineOf(lines []string, prefix string) int {
	return slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, prefix) })
}

var (
	rangeWords   = regexp.MustCompile(`\b(\d+)\.\.(\d+)\b`)
	defaultWords = regexp.MustCompile(`\bDefault ([^\s,;]+?)[.]?(\s|$)`)
)

// commentAbove is the comment block over line i: back to a blank line or
// another key's line.
func commentAbove(lines []string, i int) string {
	j := i
	for j > 0 && strings.HasPrefix(lines[j-1], "# ") {
		j--
	}
	return strings.Join(lines[j:i], " ")
}

// The config example has every knob of the registry, a profile's too, with
// its example value; a range it states is the registry's; an -update-knobs
// run adds a knob new to the registry after the one before it.
func TestConfigExampleFollowsTheRegistry(t *testing.T) {
	path := "config.example"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	keys, rows := exampleKeys()
	changed := false
	for i, key := range keys {
		at := lineOf(lines, key)
		if at < 0 && *updateKnobs {
			lines, changed = insertAfter(lines, keys[:i], exampleEntry(rows[i], key)), true
			continue
		}
		if at < 0 {
			t.Errorf("config.example lacks %s (go test ./deploy/ -update-knobs adds it from the registry)", key)
			continue
		}
		k := rows[i]
		if why := rangeMismatch(k, commentAbove(lines, at)) + defaultMismatch(k, key, commentAbove(lines, at)); why != "" {
			t.Errorf("config.example, %s: %s", k.Name, why)
		}
	}
	if changed {
		writeLines(t, path, lines)
	}
}

// rangeMismatch says where the comment's range differs from the row's.
func rangeMismatch(k settings.Knob, comment string) string {
	m := rangeWords.FindStringSubmatch(comment)
	if m == nil || k.Kind != settings.KindInt {
		return ""
	}
	if want := fmt.Sprintf("%d..%d", k.Min, k.Max); m[0] != want {
		return fmt.Sprintf("the comment says %s, the registry %s", m[0], want)
	}
	return ""
}

// defaultMismatch says where a node knob's comment states another default
// than the row's ("Default X"; "Default: ..." explains a computed one).
func defaultMismatch(k settings.Knob, key, comment string) string {
	m := defaultWords.FindStringSubmatch(comment)
	if m == nil || key != exampleKey(k, false) {
		return ""
	}
	want := k.Default
	switch {
	case k.DefaultFrom != "":
		want = k.DefaultFrom
	case want == "":
		want = "unset"
	}
	if m[1] != want && !(k.Kind == settings.KindDuration && seconds(m[1]) == seconds(want)) {
		return fmt.Sprintf("the comment says Default %s, the registry %s", m[1], want)
	}
	return ""
}

// seconds reads a duration as the knobs take it: plain seconds or a Go
// duration (-1 for neither).
func seconds(text string) time.Duration {
	if _, err := strconv.Atoi(text); err == nil {
		text += "s"
	}
	d, err := time.ParseDuration(text)
	if err != nil {
		return -1
	}
	return d
}

// exampleEntry is a new knob's comment and commented-out line.
func exampleEntry(k settings.Knob, key string) []string {
	doc := []rune(k.Doc)
	doc[0] = unicode.ToUpper(doc[0])
	return []string{fmt.Sprintf("# %s. Default %s.", string(doc), k.DefaultText()), key + k.Example}
}

// insertAfter puts entry after the last line of before's keys present in
// lines (else at the end).
func insertAfter(lines, before, entry []string) []string {
	at := len(lines)
	for i := len(before) - 1; i >= 0; i-- {
		if j := lineOf(lines, before[i]); j >= 0 {
			at = j + 1
			break
		}
	}
	return slices.Insert(lines, at, entry...)
}

func writeLines(t *testing.T, path string, lines []string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The chart's values name every node knob (TestHelmValuesNameEveryKnob);
// one they set is at the registry's default, so the default render acts
// as the binary does unconfigured; an -update-knobs run adds a knob new
// to the registry as null after the one before it.
func TestChartValuesFollowTheRegistry(t *testing.T) {
	path := filepath.Join(chartDir, "values.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Config map[string]any `json:"config"`
	}
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var before []string
	changed := false
	for _, k := range settings.Registry {
		if !k.NodeKey() {
			continue
		}
		val, ok := v.Config[k.Name]
		switch {
		case !ok && *updateKnobs:
			lines, changed = insertAfter(lines, before, []string{"  " + k.Name + ": null"}), true
		case ok && val != nil && fmt.Sprint(val) != k.Default:
			t.Errorf("values.yaml sets config.%s: %v; the knob's default is %q (leave it null)", k.Name, val, k.Default)
		}
		before = append(before, "  "+k.Name+":")
	}
	if changed {
		writeLines(t, path, lines)
	}
}

// The chart finds a profile's keys by the registry's profile fields; an
// -update-knobs run writes them.
func TestChartProfileFieldsAreTheRegistrys(t *testing.T) {
	path := filepath.Join(chartDir, "templates", "_helpers.tpl")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	at := lineOf(lines, `{{- define "vpc-cni.profileFields" -}}`) + 1
	if at == 0 || at >= len(lines) {
		t.Fatal("_helpers.tpl has no vpc-cni.profileFields")
	}
	var want []string
	for _, k := range settings.Registry {
		if k.ProfileKey() {
			want = append(want, k.Name)
		}
	}
	got := strings.Split(lines[at], "|")
	if slices.Equal(sorted(got), sorted(want)) {
		return
	}
	if !*updateKnobs {
		t.Fatalf("_helpers.tpl's profile fields %v, the registry's %v (go test ./deploy/ -update-knobs writes them)", got, want)
	}
	// Keep the fields' order, drop gone ones, add new ones at the end.
	keep := slices.DeleteFunc(got, func(f string) bool { return !slices.Contains(want, f) })
	for _, f := range want {
		if !slices.Contains(keep, f) {
			keep = append(keep, f)
		}
	}
	lines[at] = strings.Join(keep, "|")
	writeLines(t, path, lines)
}

func sorted(words []string) []string {
	words = slices.Clone(words)
	slices.Sort(words)
	return words
}
