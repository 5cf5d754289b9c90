package commands

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"vpc-cni/internal/testsupport/simtest"
)

// firstRecord starts vpcctl and reads its stdout (or stderr), every line
// of which must be a slog JSON record, up to the first that want accepts;
// then it stops vpcctl with SIGTERM.
func firstRecord(t *testing.T, env []string, stderr bool, want func(map[string]any) bool, args ...string) map[string]any {
	t.Helper()
	cmd := exec.Command(vpcctl, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	pipe := cmd.StdoutPipe
	if stderr {
		pipe = cmd.StderrPipe
	}
	out, err := pipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_, _ = io.Copy(io.Discard, out)
		_ = cmd.Wait()
	}()
	for sc := bufio.NewScanner(out); sc.Scan(); {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil || rec["level"] == nil || rec["msg"] == nil {
			t.Fatalf("not a slog JSON record: %q (%v)", sc.Text(), err)
		}
		if want(rec) {
			return rec
		}
	}
	t.Fatal("vpcctl ended before the record")
	return nil
}

// The loop with --log-format json (after the command, as a global flag
// may be) writes a pass's summary and a failed pass as JSON records.
func TestReconcileEveryLogFormatJSON(t *testing.T) {
	_, env := newSim(t, "m5.large")
	first := func(map[string]any) bool { return true }
	rec := firstRecord(t, env, false, first, "--state-dir", t.TempDir(), "reconcile", "--every", "50ms", "-o", "summary", "--log-format", "json")
	if rec["level"] != "INFO" || !strings.HasPrefix(rec["msg"].(string), "reconcile: ") {
		t.Errorf("the first pass's summary: %v", rec)
	}
	closed := with(env, "AWS_ENDPOINT_URL_EC2="+simtest.ClosedURL(t), "VPC_CNI_LOG_FORMAT=json")
	failed := func(r map[string]any) bool { return r["level"] == "ERROR" }
	rec = firstRecord(t, closed, true, failed, "--state-dir", t.TempDir(), "reconcile", "--every", "50ms", "-o", "summary")
	if !strings.HasPrefix(rec["msg"].(string), "reconcile: ") {
		t.Errorf("a failed pass: %v", rec)
	}
}

// A log format vpcctl does not write is a usage error (exit 2) naming it.
func TestLogFormatRefused(t *testing.T) {
	vpc(t, nil, "--state-dir", t.TempDir(), "pool", "status", "--log-format", "xml").
		want(t, 2, `--log-format "xml": must be text or json`)
}
