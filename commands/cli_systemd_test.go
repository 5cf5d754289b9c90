package commands

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"vpc-cni/deploy"
	"vpc-cni/install"
	"vpc-cni/maxpods"
	"vpc-cni/store"
)

// The timer's pass writes one journal line when it acted and nothing when
// there was nothing to do.
func TestReconcileSummaryIsQuietAtRest(t *testing.T) {
	_, env := newSim(t, "m5.large")
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil { // else the store says it tightened the mode
		t.Fatal(err)
	}
	r := vpc(t, env, "--state-dir", dir, "reconcile", "-o", "summary")
	r.want(t, 0, "reconcile: assign 9 addresses", "AssignPrivateIpAddresses x1")
	if n := strings.Count(r.stdout, "\n"); n != 1 || r.stderr != "" {
		t.Errorf("a pass that acted wrote %d lines, want 1\nstdout: %s\nstderr: %s", n, r.stdout, r.stderr)
	}
	r = vpc(t, env, "--state-dir", dir, "reconcile", "-o", "summary")
	r.want(t, 0)
	if r.stdout != "" || r.stderr != "" {
		t.Errorf("a pass with nothing to do wrote\nstdout: %q\nstderr: %q", r.stdout, r.stderr)
	}
}

// unitCopy is the shipped units in a temp dir, the service running the
// binary under test (systemd-analyze verify wants an executable there).
func unitCopy(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	svc := strings.ReplaceAll(deploy.Service, cliPath, vpcctl)
	if err := os.WriteFile(filepath.Join(dir, serviceName), []byte(svc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, timerName), []byte(deploy.Timer), 0o644); err != nil {
		t.Fatal(err)
	}
	boot := strings.ReplaceAll(deploy.MaxPodsService, cliPath, vpcctl)
	if err := os.WriteFile(filepath.Join(dir, maxPodsServiceName), []byte(boot), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func needSystemdAnalyze(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("systemd-analyze not installed (Debian package systemd; .ci/run installs it)")
	}
}

// systemd-analyze verify accepts the units without a single warning.
func TestSystemdUnitsVerify(t *testing.T) {
	needSystemdAnalyze(t)
	dir := unitCopy(t)
	out, err := exec.Command("systemd-analyze", "verify", filepath.Join(dir, serviceName), filepath.Join(dir, timerName),
		filepath.Join(dir, maxPodsServiceName)).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// The services are hardened to systemd's "OK" band or better.
func TestSystemdServiceSecurity(t *testing.T) {
	needSystemdAnalyze(t)
	dir := unitCopy(t)
	for _, unit := range []string{serviceName, maxPodsServiceName} {
		checkExposure(t, filepath.Join(dir, unit))
	}
}

func checkExposure(t *testing.T, unit string) {
	t.Helper()
	out, err := exec.Command("systemd-analyze", "security", "--offline=yes", unit).CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze security: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`Overall exposure level for \S+: ([0-9.]+) (\w+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no overall exposure level in:\n%s", out)
	}
	switch band := string(m[2]); band {
	case "PERFECT", "SAFE", "OK":
		t.Logf("exposure %s %s", m[1], band)
	default:
		t.Errorf("exposure %s %s, want OK or better:\n%s", m[1], band, out)
	}
}

// The service's command line is one the binary accepts: run it as written
// (against the emulator) under the hardening's writable path.
func TestSystemdServiceCommandRuns(t *testing.T) {
	_, env := newSim(t, "m5.large")
	var cmd string
	for _, line := range strings.Split(deploy.Service, "\n") {
		if c, ok := strings.CutPrefix(line, "ExecStart="); ok {
			cmd = c
		}
	}
	args := strings.Fields(cmd)
	if len(args) < 2 || args[0] != cliPath {
		t.Fatalf("ExecStart %q does not run %s", cmd, cliPath)
	}
	if !strings.Contains(deploy.Service, "ReadWritePaths="+store.DefaultDir+"\n") {
		t.Errorf("the service does not let a pass write %s", store.DefaultDir)
	}
	args = append([]string{"--state-dir", t.TempDir()}, args[1:]...)
	vpc(t, env, args...).want(t, 0, "reconcile: ")
}

// execLines are a unit's Exec lines of that key, the binary's path replaced
// by the one under test and its leading '-' (failure ignored) dropped.
func execLines(unit, key string) [][]string {
	var out [][]string
	for _, line := range strings.Split(unit, "\n") {
		if c, ok := strings.CutPrefix(line, key+"="); ok {
			args := strings.Fields(strings.TrimPrefix(c, "-"))
			out = append(out, args)
		}
	}
	return out
}

// The boot unit's command lines are ones the binary accepts: its pass, then
// max-pods writing the drop-in (here into a temp dir), run as written
// against the emulator; it is ordered before the kubelet, and writes only
// its state dir and the drop-in's directory.
func TestSystemdMaxPodsUnitCommandsRun(t *testing.T) {
	_, env := newSim(t, "m5.large")
	unit := deploy.MaxPodsService
	for _, want := range []string{"Before=kubelet.service\n", "Type=oneshot\n",
		"ReadWritePaths=" + store.DefaultDir + " -" + filepath.Dir(install.DefaultKubeletDropIn) + "\n"} {
		if !strings.Contains(unit, want) {
			t.Errorf("the boot unit lacks %q", want)
		}
	}
	pre, start := execLines(unit, "ExecStartPre"), execLines(unit, "ExecStart")
	if len(pre) != 2 || len(start) != 1 || pre[0][0] != cliPath || pre[1][0] != cliPath || start[0][0] != cliPath {
		t.Fatalf("ExecStartPre %q, ExecStart %q: want a pass and the sysctls, then max-pods", pre, start)
	}
	state, dropIn := t.TempDir(), filepath.Join(t.TempDir(), "kubelet.conf.d", maxpods.DropInName)
	vpc(t, env, append([]string{"--state-dir", state}, pre[0][1:]...)...).want(t, 0, "reconcile: ")
	// This namespace has no link with the primary ENI's MAC: not this node's
	// sysctls to set (e2e's TestPrivilegedBootUnitSetsTheNodeSysctls sets them).
	vpc(t, env, append([]string{"--state-dir", state}, pre[1][1:]...)...).want(t, 0, "not managed here")
	args := strings.Join(start[0][1:], " ")
	if !strings.Contains(args, "--write-kubelet-dropin "+install.DefaultKubeletDropIn) {
		t.Fatalf("ExecStart %q does not write %s", args, install.DefaultKubeletDropIn)
	}
	args = strings.ReplaceAll(args, install.DefaultKubeletDropIn, dropIn)
	vpc(t, env, append([]string{"--state-dir", state}, strings.Fields(args)...)...).want(t, 0, "29")
	if got := mustRead(t, dropIn); got != string(maxpods.DropIn(29)) {
		t.Errorf("drop-in:\n%s", got)
	}
}

// The node's sysctls go with a reboot and the timer's passes may not write
// /proc/sys: the boot unit sets them (node-rules sysctls) and may write
// them; the timer's service keeps ProtectKernelTunables.
func TestSystemdBootUnitSetsTheNodeSysctls(t *testing.T) {
	boot := deploy.MaxPodsService
	if !strings.Contains(boot, "\nExecStartPre=-"+cliPath+" node-rules sysctls\n") {
		t.Errorf("the boot unit does not set the node's sysctls:\n%s", boot)
	}
	if strings.Contains(boot, "\nProtectKernelTunables=yes") {
		t.Error("the boot unit may not write /proc/sys (ProtectKernelTunables=yes)")
	}
	if !strings.Contains(deploy.Service, "\nProtectKernelTunables=yes\n") {
		t.Error("the timer's service lost ProtectKernelTunables=yes")
	}
}
