package e2e

import (
	"bufio"
	"bytes"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"vpc-cni/internal/logfile"
)

// maxLogLinesPerADD: the ADD's own line, "background reconcile started",
// and the detached pass's one-line summary.
const maxLogLinesPerADD = 3

// The plugin's log stays quiet: a few lines per ADD, even when the ADD
// starts a background reconcile, with no key twice on a line; the pass's full
// report is in the state file instead (pool status shows it).
func TestPrivilegedPluginLogLinesPerADD(t *testing.T) {
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

// nobody is the unprivileged user the lock tests act as.
const nobody = 65534

// No lock file a verb takes can be opened by another user, let alone held:
// as user nobody, flock(1) fails with EACCES on every lock file in the state
// dir (where a hostPath volume makes it: 0755) and in the log's dir (0755,
// as /var/log/vpc-cni), after a rotation made the log's lock. And with the
// log past its rotation size again, STATUS, ADD and DEL complete while user
// nobody holds whatever lock it can.
func TestPrivilegedNobodyCannotStallTheVerbs(t *testing.T) {
	flockBin, err := exec.LookPath("flock")
	if err != nil {
		t.Skip("needs util-linux's flock(1)")
	}
	w := newWorld(t, worldOpts{})
	for _, d := range []string{filepath.Dir(w.stateDir), w.stateDir} {
		if err := os.Chmod(d, 0o755); err != nil { // what DirectoryOrCreate makes
			t.Fatal(err)
		}
	}
	logDir := publicDir(t)
	logFile := filepath.Join(logDir, "plugin.log")
	conf := mustJSON(t, w.conf(map[string]any{"logFile": logFile}))
	fillLog(t, logFile)
	verbWithin(t, w, "STATUS", nil, conf) // rotates: the log's lock exists from now on
	fillLog(t, logFile)

	locks := lockFiles(t, w.stateDir, logDir)
	for _, l := range locks {
		r := asNobody(flockBin, "-x", "-n", l, "true")
		if r.err == nil || !strings.Contains(string(r.stderr), "Permission denied") {
			t.Errorf("user nobody flocking %s: %v %s; want Permission denied", l, r.err, r.stderr)
		}
	}
	for _, l := range locks {
		if holdAsNobody(t, flockBin, l) {
			t.Errorf("user nobody holds LOCK_EX on %s", l)
		}
	}
	p := w.newPod("locked-out")
	verbWithin(t, w, "STATUS", nil, conf)
	verbWithin(t, w, "ADD", p, conf)
	verbWithin(t, w, "DEL", p, conf)
}

// publicDir is a root-owned 0755 directory under parents anyone may
// traverse, as /var/log/vpc-cni.
func publicDir(t *testing.T) string {
	t.Helper()
	parent, err := os.MkdirTemp("", "vpc-cni-e2e-log-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(parent) })
	dir := filepath.Join(parent, "vpc-cni")
	if err := os.Chmod(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// fillLog appends whole lines to path until it reaches the plugin's
// rotation size.
func fillLog(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Repeat("x", 1023) + "\n"
	block := []byte(strings.Repeat(line, 1024))
	for n := fi.Size(); n < logfile.MaxSize; n += int64(len(block)) {
		if _, err := f.Write(block); err != nil {
			t.Fatal(err)
		}
	}
}

// lockFiles are the lock files the binary uses in the state dir and the
// log's dir: what it made (*.lock) and the names it takes.
func lockFiles(t *testing.T, stateDir, logDir string) []string {
	t.Helper()
	seen := map[string]bool{
		filepath.Join(stateDir, "state.db.lock"):  true,
		filepath.Join(stateDir, "reconcile.lock"): true,
		filepath.Join(logDir, "plugin.log.lock"):  true,
	}
	for _, d := range []string{stateDir, logDir} {
		found, _ := filepath.Glob(filepath.Join(d, "*.lock"))
		for _, f := range found {
			seen[f] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

func nobodyCmd(path string, args ...string) *exec.Cmd {
	cmd := exec.Command(path, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}}
	return cmd
}

func asNobody(path string, args ...string) run {
	var out, errb bytes.Buffer
	cmd := nobodyCmd(path, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return run{stdout: out.Bytes(), stderr: errb.Bytes(), err: err, state: cmd.ProcessState}
}

// holdAsNobody starts flock(1) as nobody holding LOCK_EX on lock until the
// test ends, and says whether it got it (false: it exited, refused).
func holdAsNobody(t *testing.T, flockBin, lock string) bool {
	t.Helper()
	cmd := nobodyCmd(flockBin, "-x", lock, "sh", "-c", "echo held; exec cat")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	line, _ := bufio.NewReader(stdout).ReadString('\n') // "held", or EOF once it exits
	return line == "held\n"
}

// verbWithin runs verb for p (nil: STATUS's no pod) and fails the test
// unless it succeeds; a verb that never returns (blocked on a lock) fails
// it after 2 minutes, beyond any verb's own deadline.
func verbWithin(t *testing.T, w *world, verb string, p *pod, conf []byte) {
	t.Helper()
	env := []string{"CNI_COMMAND=" + verb, "CNI_PATH=" + binDir}
	if p != nil {
		env = p.env(verb)
	}
	done := make(chan run, 1)
	go func() { done <- w.execInNode(bin("vpc-cni"), env, conf) }()
	select {
	case r := <-done:
		if r.err != nil {
			t.Errorf("%s: %v\n%s%s", verb, r.err, r.stdout, r.stderr)
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("%s never returned while user nobody held what locks it could", verb)
	}
}
