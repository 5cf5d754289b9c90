package commands

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"vpc-cni/deploy"
	"vpc-cni/internal/simtest"
)

// treeOf is the files a --root tree holds, by host path: mode and mtime.
// The state dir is left out: every reconcile records its pass there.
func treeOf(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if strings.HasPrefix(rel, "var/lib/vpc-cni/") {
			return nil
		}
		out["/"+rel] = fi.Mode().String() + " " + fi.ModTime().Format(time.RFC3339Nano)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func wantMode(t *testing.T, p string, mode os.FileMode) {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != mode {
		t.Errorf("%s: mode %v, want %v", p, fi.Mode().Perm(), mode)
	}
}

// Install under --root writes every file with its mode and content, runs a
// first reconcile against the emulator, writes the conflist last (chaining
// only the plugins present), and a second run changes nothing.
func TestInstallUnderRoot(t *testing.T) {
	_, env := newSim(t, "m5.large")
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "opt/cni/bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "opt/cni/bin/portmap"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := vpc(t, env, "install", "--root", root, "--set", "WARM_IP_TARGET=3")
	r.want(t, 0, "skipped    systemctl enable --now vpc-cni-reconcile.timer", "bandwidth not chained", "reconciled pool: 3 free")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if last := lines[len(lines)-2]; last != "installed  /etc/cni/net.d/10-vpc-cni.conflist" {
		t.Errorf("the conflist is not the last step; output:\n%s", r.stdout)
	}
	if strings.Index(r.stdout, "reconciled pool") > strings.Index(r.stdout, "10-vpc-cni.conflist") {
		t.Errorf("the conflist was written before the first reconcile:\n%s", r.stdout)
	}

	bin := mustRead(t, vpcctl)
	for _, p := range []string{"opt/cni/bin/vpc-cni", "usr/local/bin/vpcctl"} {
		wantMode(t, filepath.Join(root, p), 0o755)
		if mustRead(t, filepath.Join(root, p)) != bin {
			t.Errorf("%s is not the running binary", p)
		}
	}
	for p, want := range map[string]string{
		"etc/systemd/system/vpc-cni-reconcile.service": deploy.Service,
		"etc/systemd/system/vpc-cni-reconcile.timer":   deploy.Timer,
	} {
		wantMode(t, filepath.Join(root, p), 0o644)
		if got := mustRead(t, filepath.Join(root, p)); got != want {
			t.Errorf("%s differs from deploy/:\n%s", p, got)
		}
	}
	cfg := filepath.Join(root, "etc/vpc-cni/config")
	wantMode(t, cfg, 0o644)
	if c := mustRead(t, cfg); !strings.HasPrefix(c, deploy.ConfigExample) || !strings.HasSuffix(c, "\nWARM_IP_TARGET=3\n") {
		t.Errorf("config file:\n%s", c)
	}
	var cl struct {
		CNIVersion  string   `json:"cniVersion"`
		CNIVersions []string `json:"cniVersions"`
		Plugins     []struct{ Type string }
	}
	conflist := filepath.Join(root, "etc/cni/net.d/10-vpc-cni.conflist")
	wantMode(t, conflist, 0o644)
	if err := json.Unmarshal([]byte(mustRead(t, conflist)), &cl); err != nil {
		t.Fatal(err)
	}
	if cl.CNIVersion != "1.0.0" || !reflect.DeepEqual(cl.CNIVersions, []string{"0.4.0", "1.0.0", "1.1.0"}) ||
		len(cl.Plugins) != 2 || cl.Plugins[0].Type != "vpc-cni" || cl.Plugins[1].Type != "portmap" {
		t.Errorf("conflist: %+v", cl)
	}
	if _, err := os.Stat(filepath.Join(root, "var/lib/vpc-cni/state.db")); err != nil {
		t.Errorf("the first reconcile left no state: %v", err)
	}

	before := treeOf(t, root)
	vpc(t, env, "install", "--root", root, "--set", "WARM_IP_TARGET=3").want(t, 0, "nothing changed: already installed")
	if after := treeOf(t, root); !reflect.DeepEqual(before, after) {
		t.Errorf("the second install changed files:\nbefore %v\nafter  %v", before, after)
	}
}

// A pool that cannot serve a pod (here: no instance metadata) stops the
// install before the conflist, so the node does not become ready; fixed,
// the next run completes.
func TestInstallWithoutAPoolWritesNoConflist(t *testing.T) {
	_, env := newSim(t, "m5.large")
	root := t.TempDir()
	broken := with(env, "AWS_EC2_METADATA_SERVICE_ENDPOINT="+simtest.ClosedURL(t))
	vpc(t, broken, "install", "--root", root, "--timer", "none").want(t, 1, "conflist is not written", "instance metadata")
	if _, err := os.Stat(filepath.Join(root, "etc/cni/net.d/10-vpc-cni.conflist")); err == nil {
		t.Fatal("the conflist was written although the pool cannot serve a pod")
	}
	if _, err := os.Stat(filepath.Join(root, "opt/cni/bin/vpc-cni")); err != nil {
		t.Errorf("the steps before the reconcile did not run: %v", err)
	}
	vpc(t, env, "install", "--root", root, "--timer", "none").want(t, 0, "installed  /etc/cni/net.d/10-vpc-cni.conflist")
}

// An existing configuration file is the operator's: kept byte for byte, and
// a --set it contradicts is named.
func TestInstallKeepsTheConfigFile(t *testing.T) {
	_, env := newSim(t, "m5.large")
	root := t.TempDir()
	cfg := filepath.Join(root, "etc/vpc-cni/config")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte("WARM_IP_TARGET=2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	vpc(t, env, "install", "--root", root, "--timer", "cron", "--set", "WARM_IP_TARGET=4").
		want(t, 0, "kept       /etc/vpc-cni/config", `--set WARM_IP_TARGET=4 not applied: /etc/vpc-cni/config has "2"`, "reconciled pool: 2 free")
	if c := mustRead(t, cfg); c != "WARM_IP_TARGET=2\n" {
		t.Errorf("the config file was changed:\n%s", c)
	}
	cron := mustRead(t, filepath.Join(root, "etc/cron.d/vpc-cni"))
	if !strings.Contains(cron, "* * * * * root /usr/local/bin/vpcctl reconcile") {
		t.Errorf("cron file:\n%s", cron)
	}
	if _, err := os.Stat(filepath.Join(root, "etc/systemd/system", "vpc-cni-reconcile.timer")); err == nil {
		t.Error("--timer cron installed the systemd timer too")
	}
}

// Bad input changes nothing.
func TestInstallBadInput(t *testing.T) {
	root := t.TempDir()
	vpc(t, nil, "install", "--root", root, "--set", "WARM_IP_TARGT=3").want(t, 2, "did you mean WARM_IP_TARGET")
	vpc(t, nil, "install", "--root", root, "--set", "WARM_IP_TARGET=-1").want(t, 2, "WARM_IP_TARGET")
	vpc(t, nil, "install", "--root", root, "--timer", "anacron").want(t, 2, "--timer")
	vpc(t, nil, "install", "--root", root, "--cni-bin-dir", "opt/cni").want(t, 2, "absolute")
	if tree := treeOf(t, root); len(tree) != 0 {
		t.Errorf("bad input wrote files: %v", tree)
	}
}

// Uninstall reverses install, conflist first; the configuration and state
// stay unless --purge; a second run changes nothing.
func TestUninstall(t *testing.T) {
	_, env := newSim(t, "m5.large")
	root := t.TempDir()
	vpc(t, env, "install", "--root", root).want(t, 0)
	r := vpc(t, env, "uninstall", "--root", root)
	r.want(t, 0, "kept       /etc/vpc-cni/config and /var/lib/vpc-cni")
	if first := strings.SplitN(r.stdout, "\n", 2)[0]; first != "removed    /etc/cni/net.d/10-vpc-cni.conflist" {
		t.Errorf("the conflist is not removed first:\n%s", r.stdout)
	}
	tree := treeOf(t, root)
	for p := range tree {
		if !strings.HasPrefix(p, "/etc/vpc-cni/") && !strings.HasPrefix(p, "/var/lib/vpc-cni/") {
			t.Errorf("uninstall left %s", p)
		}
	}
	if _, ok := tree["/etc/vpc-cni/config"]; !ok {
		t.Error("uninstall removed the configuration file")
	}
	vpc(t, env, "uninstall", "--root", root).want(t, 0, "nothing changed: already uninstalled")
	vpc(t, env, "uninstall", "--root", root, "--purge").want(t, 0, "removed    /var/lib/vpc-cni")
	if _, err := os.Stat(filepath.Join(root, "var/lib/vpc-cni")); err == nil {
		t.Error("--purge left the state dir")
	}
	if tree := treeOf(t, root); len(tree) != 0 {
		t.Errorf("--purge left %v", tree)
	}
}

// A second install on a node with a second ENI says "nothing changed": its
// pass makes no EC2 mutation and records no change, whatever it reports
// about what stayed (it said "installed: 1 change(s)").
func TestSecondInstallWithTwoENIsChangesNothing(t *testing.T) {
	_, env := newSim(t, "m5.large")
	root := t.TempDir()
	args := []string{"install", "--root", root, "--timer", "none", "--set", "WARM_IP_TARGET=12"}
	vpc(t, env, args...).want(t, 0)
	vpc(t, env, args...).want(t, 0, "nothing changed: already installed")
}
