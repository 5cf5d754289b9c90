package commands

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"
)

// docLine is a `vpcctl ...` command line a reader may copy: in a code block
// or a code span of README.md and docs/, or in a help text's examples.
type docLine struct{ where, line string }

var (
	codeSpan  = regexp.MustCompile("`([^`\n]*vpcctl [^`\n]*)`")
	vpcctlCmd = regexp.MustCompile(`(?:^|[\s(])vpcctl((?: +[^\s|;&>#)]+)+)`)
)

func docLines(t *testing.T) []docLine {
	var out []docLine
	pages, _ := filepath.Glob("../docs/*.md")
	for _, page := range append(pages, "../README.md") {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, chunk := range codeChunks(string(data)) {
			out = append(out, vpcctlLines(page, chunk)...)
		}
	}
	app := newApp(io.Discard, io.Discard)
	walkCommands(app.Commands, func(c *cli.Command) {
		out = append(out, vpcctlLines("help of "+c.FullName(), c.Description+"\n"+c.UsageText)...)
	})
	return append(out, vpcctlLines("vpcctl --help", appDescription)...)
}

// codeChunks are a page's code blocks, line by line, and its code spans.
func codeChunks(page string) []string {
	var out []string
	inBlock := false
	for _, l := range strings.Split(page, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inBlock = !inBlock
			continue
		}
		if inBlock {
			out = append(out, l)
			continue
		}
		for _, m := range codeSpan.FindAllStringSubmatch(l, -1) {
			out = append(out, m[1])
		}
	}
	return out
}

func vpcctlLines(where, text string) []docLine {
	var out []docLine
	for _, l := range strings.Split(text, "\n") {
		if i := strings.Index(l, " #"); i >= 0 {
			l = l[:i] // a comment
		}
		for _, m := range vpcctlCmd.FindAllStringSubmatch(l, -1) {
			out = append(out, docLine{where, strings.TrimSpace(m[1])})
		}
	}
	return out
}

func walkCommands(cmds []*cli.Command, f func(*cli.Command)) {
	for _, c := range cmds {
		f(c)
		walkCommands(c.Subcommands, f)
	}
}

// Every flag a documented vpcctl command line uses is one that command
// takes, wherever it stands on the line (max-pods --config was refused).
func TestEveryDocumentedCommandLineUsesFlagsItsCommandTakes(t *testing.T) {
	app := newApp(io.Discard, io.Discard)
	lines := docLines(t)
	if len(lines) < 60 {
		t.Fatalf("found %d command lines: the scan is broken", len(lines))
	}
	for _, d := range lines {
		if bad := undefinedFlags(app, strings.Fields(d.line)); bad != "" {
			t.Errorf("%s: `vpcctl %s`: %s", d.where, d.line, bad)
		}
	}
}

// undefinedFlags names the flags of words (a command line after "vpcctl")
// that its command does not take, or "".
func undefinedFlags(app *cli.App, words []string) string {
	flags := flagNames(app.Flags)
	cmds := app.Commands
	var bad []string
	for _, w := range words {
		w = strings.Trim(w, "[]")
		if !strings.HasPrefix(w, "-") || w == "-" || w == "--" {
			if c := findCommand(cmds, w); c != nil {
				cmds, flags = c.Subcommands, flagNames(c.Flags) // a flag belongs to the level it follows
			}
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(w, "-"), "=")
		if name != "" && !flags[name] && name != "help" && name != "h" {
			bad = append(bad, w)
		}
	}
	if len(bad) > 0 {
		return "no such flag " + strings.Join(bad, ", ")
	}
	return ""
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// The check itself: the lines of the finding are caught on a command tree
// that takes the global flags only before the command.
func TestUndefinedFlagsCatchesAGlobalFlagAfterTheCommand(t *testing.T) {
	app := newApp(io.Discard, io.Discard)
	if bad := undefinedFlags(app, strings.Fields("max-pods --instance-type m5.large --config F -o json")); bad != "" {
		t.Errorf("max-pods --config: %s", bad)
	}
	if bad := undefinedFlags(app, strings.Fields("pool status --no-such-flag")); bad == "" {
		t.Error("an unknown flag passed")
	}
	if bad := undefinedFlags(app, strings.Fields("reconcile [--dry-run] [-o FMT]")); bad != "" {
		t.Errorf("a synopsis: %s", bad)
	}
}

// A target flag's absence leaves the target alone: its help must not say 0.
func TestPoolWarmHelpSaysAnAbsentTargetIsUnchanged(t *testing.T) {
	r := vpc(t, nil, "pool", "warm", "--help")
	r.want(t, 0, "--ip-target value", "(default: unchanged)")
	if strings.Contains(r.stdout, "(default: 0)") {
		t.Errorf("pool warm --help says a target defaults to 0:\n%s", r.stdout)
	}
}

// docs/operating.md's command list is every command (it lacked max-pods).
func TestOperatingPageListsEveryCommand(t *testing.T) {
	page, err := os.ReadFile("../docs/operating.md")
	if err != nil {
		t.Fatal(err)
	}
	_, list, _ := strings.Cut(string(page), "this is every command")
	list, _, _ = strings.Cut(list, "\n```\n\n")
	app := newApp(io.Discard, io.Discard)
	var leaves []string
	var walk func(prefix string, cmds []*cli.Command)
	walk = func(prefix string, cmds []*cli.Command) {
		for _, c := range cmds {
			if len(c.Subcommands) > 0 {
				walk(prefix+c.Name+" ", c.Subcommands)
				continue
			}
			if !c.Hidden && c.Name != "help" {
				leaves = append(leaves, prefix+c.Name)
			}
		}
	}
	walk("", app.Commands)
	for _, name := range leaves {
		if !strings.Contains(list, "vpcctl "+name) {
			t.Errorf("docs/operating.md's command list lacks vpcctl %s", name)
		}
	}
}

// --no-headers drops a table's header row and keeps its rows.
func TestNoHeaders(t *testing.T) {
	_, env := newSim(t, "m5.large")
	dir := t.TempDir()
	vpc(t, env, "--state-dir", dir, "reconcile").want(t, 0)
	with := vpc(t, env, "--state-dir", dir, "events")
	with.want(t, 0, "TIME", "KIND")
	without := vpc(t, env, "--state-dir", dir, "events", "--no-headers")
	without.want(t, 0, "adopted")
	if strings.Contains(without.stdout, "KIND") {
		t.Errorf("events --no-headers has its header:\n%s", without.stdout)
	}
}

// events --follow prints what is there, then each new event as it is
// recorded, and ends on SIGINT with exit 0.
func TestEventsFollow(t *testing.T) {
	_, env := newSim(t, "m5.large")
	dir := t.TempDir()
	vpc(t, env, "--state-dir", dir, "reconcile").want(t, 0)
	cmd := exec.Command(vpcctl, "--state-dir", dir, "events", "--follow", "-o", "json")
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	stuck := time.AfterFunc(2*time.Minute, func() { _ = cmd.Process.Kill() }) // a hang ends the read, not the test binary
	defer stuck.Stop()
	lines := bufio.NewScanner(out)
	waitFor := func(kind, says string) {
		t.Helper()
		for lines.Scan() {
			var e struct{ Kind, Message string }
			if err := json.Unmarshal(lines.Bytes(), &e); err != nil {
				t.Fatalf("not one JSON object per line: %q: %v", lines.Text(), err)
			}
			if e.Kind == kind && strings.Contains(e.Message, says) {
				return
			}
		}
		t.Fatalf("events --follow ended before a %s event saying %q: %v", kind, says, lines.Err())
	}
	waitFor("adopted-eni", "device 0")
	vpc(t, with(env, "WARM_IP_TARGET=abc"), "--state-dir", dir, "reconcile").want(t, 2)
	waitFor("reconcile-failed", "WARM_IP_TARGET") // recorded after --follow started
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("events --follow on SIGINT: %v", err)
	}
}
