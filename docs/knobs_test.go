package docs

import (
	"flag"
	"os"
	"slices"
	"strings"
	"testing"
	"unicode"

	"vpc-cni/settings"
)

var updateKnobs = flag.Bool("update-knobs", false,
	"rewrite configuration.md's Type/Default lines from settings.Registry and add the missing entries (make knobs)")

const configurationPage = "configuration.md"

// knobLines is the Type/Default line the registry gives each key of the
// file, in the registry's order (a profile's keys as PROFILE_<NAME>_FIELD).
func knobLines() (keys []string, lines map[string]string) {
	lines = map[string]string{}
	add := func(key, typ, def string) {
		keys = append(keys, key)
		lines[key] = "Type: " + typ + " · Default: " + def
	}
	for _, k := range settings.Registry {
		if k.NodeKey() {
			add(k.Name, k.TypeText(), k.DefaultText())
		}
	}
	for _, k := range settings.Registry {
		switch k.Scope {
		case settings.PerProfile:
			add(settings.ProfilePrefix+"<NAME>_"+k.Name, k.TypeText(), "the node's "+k.Name)
		case settings.ProfileOnly:
			add(settings.ProfilePrefix+"<NAME>_"+k.Name, k.TypeText(), k.DefaultText())
		}
	}
	return keys, lines
}

// sameText compares a docs line with the registry's, ignoring the
// backticks and line breaks the page adds.
func sameText(a, b string) bool {
	norm := func(s string) string { return strings.Join(strings.Fields(strings.ReplaceAll(s, "`", "")), " ") }
	return norm(a) == norm(b)
}

// page is configuration.md's file section as lines, with where each entry's
// heading and Type/Default lines are.
type page struct {
	lines   []string
	start   int // the file section's heading
	end     int // the next ## heading
	heading map[string]int
}

func readPage(t *testing.T) *page {
	t.Helper()
	data, err := os.ReadFile(configurationPage)
	if err != nil {
		t.Fatal(err)
	}
	p := &page{lines: strings.Split(string(data), "\n"), start: -1, heading: map[string]int{}}
	for i, l := range p.lines {
		switch {
		case strings.TrimSpace(l) == fileSection:
			p.start = i
		case p.start >= 0 && strings.HasPrefix(l, "## "):
			p.end = i
			return p.index()
		}
	}
	t.Fatalf("%s has no section %q followed by another", configurationPage, fileSection)
	return nil
}

func (p *page) index() *page {
	for i := p.start; i < p.end; i++ {
		if m := entryHeading.FindStringSubmatch(p.lines[i]); m != nil {
			p.heading[m[1]] = i
		}
	}
	return p
}

// typeLines finds the entry's Type/Default text: from its Type: line to the
// first blank line.
func (p *page) typeLines(key string) (from, to int) {
	from = p.heading[key] + 1
	for to = from; to < p.end && strings.TrimSpace(p.lines[to]) != ""; to++ {
	}
	return from, to
}

// entryEnd is the line after the entry's last: the next heading.
func (p *page) entryEnd(key string) int {
	i := p.heading[key] + 1
	for i < p.end && !strings.HasPrefix(p.lines[i], "### ") {
		i++
	}
	return i
}

// wrap breaks text into lines of at most 120 characters, as the page is.
func wrap(text string) []string {
	var out []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > 120 {
			out = append(out, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return append(out, line)
}

// Each knob's Type and Default on the configuration page are the
// registry's: a range or default is written once, in settings.Registry.
func TestConfigurationPageTypesAndDefaultsAreTheRegistrys(t *testing.T) {
	keys, want := knobLines()
	p := readPage(t)
	for _, key := range keys {
		if _, ok := p.heading[key]; !ok {
			continue // TestConfigurationPageListsEveryFileKey names it
		}
		from, to := p.typeLines(key)
		got := strings.Join(p.lines[from:to], " ")
		if sameText(got, want[key]) {
			continue
		}
		if !*updateKnobs {
			t.Errorf("%s: configuration.md says\n\t%s\nthe registry (settings/knobs.go)\n\t%s\n(go test ./docs/ -update-knobs writes it)", key, got, want[key])
			continue
		}
		p.lines = slices.Replace(p.lines, from, to, wrap(want[key])...)
		p = p.index()
	}
	if *updateKnobs {
		addMissingEntries(t, p, keys, want)
	}
}

// addMissingEntries writes an entry for each registry key the page lacks,
// after the entry of the key before it in the registry, with its one line
// of doc as the meaning.
func addMissingEntries(t *testing.T, p *page, keys []string, want map[string]string) {
	t.Helper()
	for i, key := range keys {
		if _, ok := p.heading[key]; ok {
			continue
		}
		at := p.end
		if i > 0 {
			if _, ok := p.heading[keys[i-1]]; ok {
				at = p.entryEnd(keys[i-1])
			}
		}
		entry := append([]string{"### `" + key + "`"}, wrap(want[key])...)
		entry = append(entry, "", sentence(docOf(key)), "")
		p.lines = slices.Insert(p.lines, at, entry...)
		p.end += len(entry)
		p = p.index()
	}
	if err := os.WriteFile(configurationPage, []byte(strings.Join(p.lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}

func docOf(key string) string {
	k, _ := settings.LookupKnob(strings.TrimPrefix(key, settings.ProfilePrefix+"<NAME>_"))
	return k.Doc
}

// sentence capitalises a doc line and ends it with a full stop.
func sentence(s string) string {
	if s == "" {
		return s
	}
	r := []rune(s)
	r[0] = unicode.ToUpper(r[0])
	return strings.TrimSuffix(string(r), ".") + "."
}
