package commands

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// commandRef is `vpcctl <words>` where the text names a command: in a code
// span or quotes, or after "run", "see", "try" or a colon. Prose
// ("vpcctl reads the file") is not a reference.
var commandRef = regexp.MustCompile("(?:^|[`'\"(]|\\brun |\\bsee |\\btry |: )vpcctl((?: [a-z][a-z0-9-]*)+)")

// unknownCommand says what in `vpcctl words` the CLI does not have, or "".
func unknownCommand(app *cli.App, words []string) string {
	cmds, path := app.Commands, "vpcctl"
	for i, w := range words {
		if len(cmds) == 0 {
			return "" // a leaf command's arguments
		}
		var next *cli.Command
		for _, c := range cmds {
			for _, n := range c.Names() {
				if n == w {
					next = c
				}
			}
		}
		if next == nil {
			if i > 0 && w == "help" {
				return ""
			}
			return path + " has no command " + strconv.Quote(w)
		}
		cmds, path = next.Subcommands, path+" "+w
	}
	return ""
}

// texts are the repository's texts an operator reads: every string literal
// of the Go code that is not a test, and the docs, README and deploy files.
func texts(t *testing.T) map[string]string {
	out := map[string]string{}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && (name == ".git" || name == "testdata" || name == "bin" || name == "node_modules") {
			return filepath.SkipDir
		}
		switch {
		case d.IsDir():
			return nil
		case strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go"):
			out[path] = goStrings(t, path)
		case strings.HasSuffix(name, ".md") || strings.HasPrefix(path, filepath.Join("..", "deploy")):
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			out[path] = string(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// goStrings is every string literal of a Go file, one per line.
func goStrings(t *testing.T, path string) string {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	ast.Inspect(f, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if s, err := strconv.Unquote(lit.Value); err == nil {
				b.WriteString(s + "\n")
			}
		}
		return true
	})
	return b.String()
}

// Every `vpcctl ...` command a message, a help text, a doc or a deploy file
// names exists in the CLI (migrate's report named `vpcctl status`).
func TestEveryCommandNamedExists(t *testing.T) {
	app := newApp(io.Discard, io.Discard)
	found := 0
	for path, text := range texts(t) {
		for _, m := range commandRef.FindAllStringSubmatch(text, -1) {
			found++
			if bad := unknownCommand(app, strings.Fields(m[1])); bad != "" {
				t.Errorf("%s names %q: %s", path, "vpcctl"+m[1], bad)
			}
		}
	}
	if found < 50 {
		t.Fatalf("found %d command references: the scan is broken", found)
	}
}

// The check itself: a command that is not there is caught.
func TestUnknownCommandCatchesWhatIsNotThere(t *testing.T) {
	app := newApp(io.Discard, io.Discard)
	for words, bad := range map[string]bool{"status": true, "pool stats": true, "pool status": false, "sim serve": false,
		"state rebuild": false, "completion bash": false, "pool help": false} {
		if got := unknownCommand(app, strings.Fields(words)) != ""; got != bad {
			t.Errorf("vpcctl %s: unknown %v, want %v", words, got, bad)
		}
	}
	if m := commandRef.FindAllString("then vpcctl reads the file; run `vpcctl pool status`", -1); len(m) != 1 {
		t.Errorf("matches %q", m)
	}
}

// Counted nouns go through printers.Plural ("1 change", "2 changes"); no
// message says "change(s)" or "pass(es)".
func TestNoMessageHedgesItsPlural(t *testing.T) {
	hedge := regexp.MustCompile(`[a-z]\((s|es)\)`)
	for path, text := range texts(t) {
		if !strings.HasSuffix(path, ".go") {
			continue
		}
		for _, m := range hedge.FindAllString(text, -1) {
			t.Errorf("%s: %q", path, m)
		}
	}
}
