package docs

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"vpc-cni/plugin"
	"vpc-cni/reconcile"
	"vpc-cni/settings"
)

// The configuration page holds one entry per knob:
//
//	### `KEY`
//	Type: ... · Default: ...
//
// under "## The configuration file" (the file's keys) and "## The plugin's
// conflist keys" (plugin.Options, timeouts as `timeouts.add`).
const (
	fileSection     = "## The configuration file"
	conflistSection = "## The plugin's conflist keys"
)

var entryHeading = regexp.MustCompile("^### `([^`]+)`\\s*$")

type entry struct {
	key  string
	body string
}

// entries returns the ### entries of the named ## section of page.
func entries(t *testing.T, page, section string) []entry {
	t.Helper()
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	var out []entry
	in, found := false, false
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			in = strings.TrimSpace(line) == section
			found = found || in
		case !in:
		case strings.HasPrefix(line, "### "):
			m := entryHeading.FindStringSubmatch(line)
			if m == nil {
				t.Errorf("%s: %q: an entry heading is ### `KEY`", page, line)
				continue
			}
			out = append(out, entry{key: m[1]})
		case len(out) > 0:
			out[len(out)-1].body += line + "\n"
		}
	}
	if !found {
		t.Fatalf("%s has no section %q", page, section)
	}
	return out
}

// sameKeys fails when the page and the code disagree, naming each key.
func sameKeys(t *testing.T, what string, documented []entry, code []string) {
	t.Helper()
	doc := map[string]bool{}
	for _, e := range documented {
		if doc[e.key] {
			t.Errorf("%s: %s is documented twice", what, e.key)
		}
		doc[e.key] = true
		if !strings.Contains(e.body, "Type:") || !strings.Contains(e.body, "Default:") {
			t.Errorf("%s: the entry for %s lacks its Type: and Default:", what, e.key)
		}
	}
	accepted := map[string]bool{}
	for _, k := range code {
		accepted[k] = true
		if !doc[k] {
			t.Errorf("%s: the code accepts %s but configuration.md has no ### `%s` entry", what, k, k)
		}
	}
	for _, e := range documented {
		if !accepted[e.key] {
			t.Errorf("%s: configuration.md documents %s, which the code does not accept", what, e.key)
		}
	}
}

// fileKeys is every key settings.ParseFile accepts: the named knobs and the
// per-zone custom networking keys, written ENI_CONFIG_<ZONE>.
func fileKeys(t *testing.T) []string {
	keys := append([]string{settings.ENIConfigPrefix + "<ZONE>"}, settings.FileKeys...)
	if _, err := settings.ParseFile("t", []byte(settings.ENIConfigPrefix+"US_WEST_2A=subnet=subnet-1\n")); err != nil {
		t.Fatalf("the per-zone key is no longer accepted: %v", err)
	}
	for _, f := range settings.ProfileFields {
		keys = append(keys, settings.ProfilePrefix+"<NAME>_"+f)
		if _, err := settings.ParseFile("t", []byte(settings.ProfileKey("gold", f)+"=1\n")); err != nil {
			t.Fatalf("the profile key %s is no longer accepted: %v", f, err)
		}
	}
	return keys
}

func TestConfigurationPageListsEveryFileKey(t *testing.T) {
	documented := entries(t, "configuration.md", fileSection)
	for _, e := range documented {
		key := strings.Replace(strings.Replace(e.key, "<ZONE>", "US_WEST_2A", 1), "<NAME>", "GOLD", 1)
		if _, err := settings.ParseFile("configuration.md", []byte(key+"=1\n")); err != nil &&
			strings.Contains(err.Error(), "key") {
			t.Errorf("configuration.md documents %s, but the file refuses it: %v", e.key, err)
		}
	}
	sameKeys(t, "configuration file", documented, fileKeys(t))
}

// conflistKeys walks plugin.Options' JSON names; nested objects as a.b.
func conflistKeys(typ reflect.Type, prefix string) []string {
	var keys []string
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		if f.Type.Kind() == reflect.Struct && f.Type.NumField() > 0 && f.Type.Field(0).Tag.Get("json") != "" {
			keys = append(keys, conflistKeys(f.Type, prefix+name+".")...)
			continue
		}
		keys = append(keys, prefix+name)
	}
	return keys
}

func TestConfigurationPageListsEveryConflistKey(t *testing.T) {
	keys := conflistKeys(reflect.TypeOf(plugin.Options{}), "")
	if len(keys) < 5 {
		t.Fatalf("found only %v in plugin.Options: the walk is broken", keys)
	}
	sameKeys(t, "conflist", entries(t, "configuration.md", conflistSection), keys)
}

// The table of failure causes: the rows reconcile.Causes gives, rendered
// as | `name` | meaning | what to do |, in its order.
const causesSection = "### Failure causes"

// causeTable renders reconcile's table of causes as the page shows it.
func causeTable() []string {
	rows := []string{"| cause | what it means | what to do |", "|---|---|---|"}
	for _, c := range reconcile.Causes() {
		rows = append(rows, fmt.Sprintf("| `%s` | %s | %s |", c.Name, c.Meaning, c.Action))
	}
	return rows
}

func TestOperatingPageExplainsEveryFailureCause(t *testing.T) {
	data, err := os.ReadFile("operating.md")
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	in := false
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "#") {
			in = strings.TrimSpace(line) == causesSection
			continue
		}
		if in && strings.HasPrefix(line, "|") {
			documented = append(documented, line)
		}
	}
	if want := causeTable(); !reflect.DeepEqual(documented, want) {
		t.Errorf("operating.md's table under %q differs from reconcile.Causes(); it should read:\n%s",
			causesSection, strings.Join(want, "\n"))
	}
}

func TestREADMEIsShort(t *testing.T) {
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n > 250 {
		t.Errorf("README.md has %d lines; keep it at most 250 and move the rest to docs/", n)
	}
	for _, cmd := range []string{"make demo", "make test"} {
		if !strings.Contains(string(data), cmd) {
			t.Errorf("README.md no longer says %q", cmd)
		}
	}
}

// hexWord is a word of 7 to 40 lower-case hex digits; commitHashes keeps
// those with a digit and a letter that are not part of an ID or a longer
// token (eni-0abc…, i-0abc…, subnet-…, sg-…, a_b, 0x80). A MAC's or an
// IPv6 address's groups are too short to match.
var hexWord = regexp.MustCompile(`[0-9a-f]{7,40}`)

func commitHashes(text string) []string {
	var found []string
	for _, loc := range hexWord.FindAllStringIndex(text, -1) {
		w := text[loc[0]:loc[1]]
		if loc[0] > 0 && strings.ContainsRune("-_", rune(text[loc[0]-1])) || partOfWord(text, loc[0]-1) {
			continue
		}
		if loc[1] < len(text) && (strings.ContainsRune("-_", rune(text[loc[1]])) || partOfWord(text, loc[1])) {
			continue
		}
		if strings.ContainsAny(w, "0123456789") && strings.ContainsAny(w, "abcdef") {
			found = append(found, w)
		}
	}
	return found
}

func partOfWord(text string, i int) bool {
	if i < 0 || i >= len(text) {
		return false
	}
	c := text[i]
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func TestCommitHashDetector(t *testing.T) {
	for text, want := range map[string]int{
		"at commit a50b485, on":               1,
		"(commit 116a271)":                    1,
		"github.com/x/y/commit/27c7710e9":     1,
		"9dac1f8.":                            1,
		"at 1ed0350: 7,073 ADDs":              1,
		"eni-0a1b2c3d4e5f60001":               0,
		"subnet-0a1b2c3d4e5f60001 sg-0aaa111": 0,
		"i-0123456789abcdef0":                 0,
		"mac 0a:1b:2c:3d:4e:5f":               0,
		"ct mark 0x00000080":                  0,
		"1234567 addresses; deadbeef":         0,
		"vpc-cni 3f2a1b0c 1":                  1,
		"abc1234x":                            0,
	} {
		if got := len(commitHashes(text)); got != want {
			t.Errorf("commitHashes(%q) found %d, want %d", text, got, want)
		}
	}
}

func TestNoCommitHashInTheDocs(t *testing.T) {
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) == 0 {
		t.Fatal("no pages in docs/")
	}
	for _, page := range append(pages, "../README.md") {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if h := commitHashes(line); len(h) > 0 {
				t.Errorf("%s:%d: %v looks like a commit hash: git holds history, the docs do not", page, i+1, h)
			}
		}
	}
}

var (
	mdLink  = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading = regexp.MustCompile(`(?m)^#+ (.+)$`)
	notSlug = regexp.MustCompile(`[^a-z0-9 _-]`)
)

// anchors are a page's heading slugs, as GitHub writes them.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(text, -1) {
		slug := notSlug.ReplaceAllString(strings.ToLower(m[1]), "")
		out[strings.ReplaceAll(slug, " ", "-")] = true
	}
	return out
}

func TestLinksBetweenPagesResolve(t *testing.T) {
	pages, _ := filepath.Glob("*.md")
	for _, page := range append(pages, "../README.md") {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(data), -1) {
			target, anchor, _ := strings.Cut(m[1], "#")
			if strings.Contains(target, "://") {
				continue
			}
			file := page
			if target != "" {
				file = filepath.Join(filepath.Dir(page), target)
			}
			body, err := os.ReadFile(file)
			if err != nil {
				t.Errorf("%s links to %s, which does not exist", page, m[1])
				continue
			}
			if anchor != "" && !anchors(string(body))[anchor] {
				t.Errorf("%s links to %s, but %s has no heading #%s", page, m[1], file, anchor)
			}
		}
	}
}

// The conflist the configuration page shows as shipped is the shipped one
// (it lacked the pod-annotations capability that profiles depend on).
func TestConfigurationPageShowsTheShippedConflist(t *testing.T) {
	page, err := os.ReadFile("configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, _ := strings.Cut(string(page), conflistSection)
	_, block, ok := strings.Cut(after, "```json\n")
	block, _, _ = strings.Cut(block, "```")
	if !ok {
		t.Fatalf("no json block under %q", conflistSection)
	}
	shipped, err := os.ReadFile("../deploy/10-vpc-cni.conflist")
	if err != nil {
		t.Fatal(err)
	}
	var shown, want any
	if err := json.Unmarshal([]byte(block), &shown); err != nil {
		t.Fatalf("the page's conflist: %v", err)
	}
	if err := json.Unmarshal(shipped, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(shown, want) {
		t.Errorf("configuration.md shows\n%s\nbut deploy/10-vpc-cni.conflist is\n%s", block, shipped)
	}
}
