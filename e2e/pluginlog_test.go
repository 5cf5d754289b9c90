package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// maxLogLinesPerADD: the ADD's own line, "background reconcile started",
// and the detached pass's one-line summary.
const maxLogLinesPerADD = 3

// The plugin's log stays quiet: a few lines per ADD, even when the ADD
// starts a background reconcile, with no key twice on a line; the pass's full
// report is in the state file instead (pool status shows it).
func TestPluginLogLinesPerADD(t *testing.T) {
	w := newWorld(t, worldOpts{})
	logFile := filepath.Join(w.stateDir, "plugin.log")
	t.Cleanup(func() { waitBackgroundPasses(t, logFile) })
	conf := mustJSON(t, w.conf(map[string]any{"backgroundReconcile": true, "logLevel": "info"}))
	var before int
	passes := 0
	for _, name := range []string{"log-0", "log-1", "log-2"} {
		w.add(w.newPod(name), conf)
		waitBackgroundPasses(t, logFile)
		lines := logLines(t, logFile)
		added := lines[before:]
		before = len(lines)
		if len(added) > maxLogLinesPerADD {
			t.Errorf("ADD %s wrote %d log lines, want at most %d:\n%s", name, len(added), maxLogLinesPerADD, strings.Join(added, "\n"))
		}
		for _, l := range added {
			if k := duplicateKey(l); k != "" {
				t.Errorf("key %q twice in %q", k, l)
			}
			if strings.Contains(l, `msg="reconcile pass"`) {
				passes++
				for _, want := range []string{"did=", "ec2Calls=", "took="} {
					if !strings.Contains(l, want) {
						t.Errorf("pass summary lacks %s: %q", want, l)
					}
				}
			}
		}
	}
	if passes == 0 {
		t.Errorf("no background pass logged its summary (the pool never ran low?):\n%s", strings.Join(logLines(t, logFile), "\n"))
	}
	t.Logf("plugin log:\n%s", strings.Join(logLines(t, logFile), "\n"))
	r := w.vpcctl(nil, "pool", "status", "-o", "json")
	if r.err != nil || !strings.Contains(string(r.stdout), `"lastReconcile"`) {
		t.Errorf("pool status does not carry the last pass's report: %v %s", r.err, r.stdout)
	}
}

func logLines(tb testing.TB, path string) []string {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return strings.Split(strings.TrimRight(string(b), "\n"), "\n")
}

var (
	quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	logKey = regexp.MustCompile(`(?:^|\s)([A-Za-z0-9_.]+)=`)
)

// duplicateKey returns a key that appears twice on a logfmt line.
func duplicateKey(line string) string {
	seen := map[string]bool{}
	for _, m := range logKey.FindAllStringSubmatch(quoted.ReplaceAllString(line, `""`), -1) {
		if seen[m[1]] {
			return m[1]
		}
		seen[m[1]] = true
	}
	return ""
}
