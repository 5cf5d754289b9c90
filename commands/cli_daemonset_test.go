package commands

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The DaemonSet's init container: the ConfigMap's file replaces the
// configuration, vpcctl goes next to the plugin, no timer.
func TestInstallAsTheDaemonSetDoes(t *testing.T) {
	_, env := newSim(t, "m5.large")
	root := t.TempDir()
	src := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(src, []byte("WARM_IP_TARGET=2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"install", "--root", root, "--timer", "none", "--bin-dir", "/opt/cni/bin", "--config-from", src}
	vpc(t, env, args...).want(t, 0, "installed  /opt/cni/bin/vpcctl", "reconciled pool: 2 free", "installed  /etc/cni/net.d/10-vpc-cni.conflist")
	if c := mustRead(t, filepath.Join(root, "etc/vpc-cni/config")); c != "WARM_IP_TARGET=2\n" {
		t.Errorf("config file %q, want the ConfigMap's", c)
	}
	for _, p := range []string{"usr/local/bin/vpcctl", "etc/systemd/system/vpc-cni-reconcile.timer", "etc/cron.d/vpc-cni"} {
		if _, err := os.Stat(filepath.Join(root, p)); err == nil {
			t.Errorf("%s installed", p)
		}
	}
	vpc(t, env, args...).want(t, 0, "nothing changed")

	if err := os.WriteFile(src, []byte("WARM_IP_TARGET=two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	vpc(t, env, args...).want(t, 2, "WARM_IP_TARGET")
	if c := mustRead(t, filepath.Join(root, "etc/vpc-cni/config")); c != "WARM_IP_TARGET=2\n" {
		t.Errorf("a bad ConfigMap changed the config file to %q", c)
	}
}

// The DaemonSet's container: a pass every interval until SIGTERM, which
// ends it with exit 0.
func TestReconcileEveryStopsOnSIGTERM(t *testing.T) {
	_, env := newSim(t, "m5.large")
	cmd := exec.Command(vpcctl, "--state-dir", t.TempDir(), "reconcile", "--every", "50ms", "-o", "summary")
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), "reconcile: ") {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("first line %q, want the first pass's summary", sc.Text())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for sc.Scan() {
		t.Errorf("a pass at rest printed %q", sc.Text())
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("after SIGTERM: %v, want exit 0", err)
	}
	vpc(t, env, "reconcile", "--every", "1s", "--dry-run").want(t, 2, "--every")
}
