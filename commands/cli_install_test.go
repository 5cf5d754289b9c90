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
	"vpc-cni/internal/testsupport/simtest"
	"vpc-cni/maxpods"
	"vpc-cni/sim/ec2sim"
	"vpc-cni/store"
)

// treeOf is the files a --root tree holds, by host path: mode and mtime.
// The state dir is left out: every reconcile records its pass there; and
// the lock beside it, whose holder writes its pid and start into it.
func treeOf(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if strings.HasPrefix(rel, "var/lib/vpc-cni/") || rel == "var/lib/vpc-cni."+store.ReconcileLockFile {
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
		if !strings.HasPrefix(p, "/etc/vpc-cni/") && !strings.HasPrefix(p, "/var/lib/vpc-cni/") && p != "/var/lib/vpc-cni.reconcile.lock" {
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

// The systemd path tells the kubelet the node's capacity before it starts:
// the drop-in with maxPods from the first reconcile's pool, and the boot
// unit that rewrites it, both at the paths the flags give (here under
// --root: the test never touches the real /etc). --timer none (a
// DaemonSet, whose kubelet already runs) writes neither.
func TestInstallWritesTheKubeletCapacity(t *testing.T) {
	_, env := newSim(t, "m5.large")
	root := t.TempDir()
	r := vpc(t, env, "install", "--root", root)
	r.want(t, 0, "installed  /etc/kubernetes/kubelet.conf.d/40-vpc-cni-max-pods.conf",
		"kubelet maxPods 29: start the kubelet with --config-dir /etc/kubernetes/kubelet.conf.d",
		"installed  /etc/systemd/system/vpc-cni-max-pods.service", "skipped    systemctl enable vpc-cni-max-pods.service")
	dropIn := filepath.Join(root, "etc/kubernetes/kubelet.conf.d/40-vpc-cni-max-pods.conf")
	wantMode(t, dropIn, 0o644)
	if got := mustRead(t, dropIn); got != string(maxpods.DropIn(29)) || !strings.Contains(got, "kind: KubeletConfiguration\nmaxPods: 29\n") {
		t.Errorf("drop-in:\n%s", got)
	}
	if got := mustRead(t, filepath.Join(root, "etc/systemd/system/vpc-cni-max-pods.service")); got != deploy.MaxPodsService {
		t.Errorf("the boot unit differs from deploy/:\n%s", got)
	}
	online := vpc(t, env, "--state-dir", filepath.Join(root, "var/lib/vpc-cni"), "max-pods", "-o", "json")
	online.want(t, 0, `"maxPods": 29`, `"source": "node"`)

	other := t.TempDir()
	vpc(t, env, "--config", "/etc/vpc/cfg", "install", "--root", other, "--kubelet-dropin", "/etc/kubelet.d/50-pods.conf").want(t, 0)
	unit := mustRead(t, filepath.Join(other, "etc/systemd/system/vpc-cni-max-pods.service"))
	for _, want := range []string{"--config /etc/vpc/cfg max-pods --from-imds --write-kubelet-dropin /etc/kubelet.d/50-pods.conf\n",
		"--config /etc/vpc/cfg reconcile --wait", "ReadWritePaths=/var/lib/vpc-cni -/etc/kubelet.d\n"} {
		if !strings.Contains(unit, want) {
			t.Errorf("the boot unit lacks %q:\n%s", want, unit)
		}
	}
	if _, err := os.Stat(filepath.Join(other, "etc/kubelet.d/50-pods.conf")); err != nil {
		t.Errorf("no drop-in at --kubelet-dropin: %v", err)
	}

	none := t.TempDir()
	vpc(t, env, "install", "--root", none, "--timer", "none").want(t, 0)
	for _, p := range []string{"etc/kubernetes", "etc/systemd/system/vpc-cni-max-pods.service"} {
		if _, err := os.Stat(filepath.Join(none, p)); err == nil {
			t.Errorf("--timer none wrote %s", p)
		}
	}
}

// --image installs everything but node state: no pass, no state file, no
// kubelet drop-in (the boot unit writes it at each instance's boot); the
// units and the conflist are there, the state dir exists and is empty. EC2
// sees no call.
func TestInstallImageWritesNoNodeState(t *testing.T) {
	sim, env := newSim(t, "m5.large")
	root := t.TempDir()
	r := vpc(t, env, "install", "--root", root, "--image")
	r.want(t, 0, "skipped    first reconcile (--image", "skipped    kubelet drop-in (--image",
		"installed  /etc/systemd/system/vpc-cni-max-pods.service", "installed  /etc/cni/net.d/10-vpc-cni.conflist")
	entries, err := os.ReadDir(filepath.Join(root, "var/lib/vpc-cni"))
	if err != nil || len(entries) != 0 {
		t.Errorf("the state dir after --image: %v, %v; want it empty", entries, err)
	}
	wantMode(t, filepath.Join(root, "var/lib/vpc-cni"), 0o700)
	for _, p := range []string{"etc/kubernetes/kubelet.conf.d/40-vpc-cni-max-pods.conf"} {
		if _, err := os.Stat(filepath.Join(root, p)); err == nil {
			t.Errorf("--image wrote %s", p)
		}
	}
	if calls := sim.Counters(); len(calls) != 0 {
		t.Errorf("--image called EC2: %v", calls)
	}
	vpc(t, env, "install", "--root", t.TempDir(), "--image", "--timer", "cron").want(t, 2, "--image with --timer cron")
}

// The boot unit computes max pods for the instance it runs on: a state dir
// made on a t3.small (an image builder) on an m5.large gives the m5.large's
// 29 from IMDS, not the state's 11, even when the unit's pass failed.
func TestBootUnitComputesMaxPodsForThisInstance(t *testing.T) {
	_, builder := newSim(t, "t3.small")
	dir := t.TempDir()
	vpc(t, builder, "--state-dir", dir, "reconcile").want(t, 0)
	sim, err := ec2sim.New(ec2sim.Config{InstanceType: "m5.large", InstanceID: "i-0b0b0b0b0b0b0b0b0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	env := append(sim.Env(), "AWS_MAX_ATTEMPTS=1")
	var args []string
	for _, line := range strings.Split(deploy.MaxPodsService, "\n") {
		if cmd, ok := strings.CutPrefix(line, "ExecStart="); ok {
			args = strings.Fields(cmd)[1:] // the unit's vpcctl command line
		}
	}
	dropIn := filepath.Join(dir, "kubelet.conf.d", "40.conf")
	for i, a := range args {
		if strings.HasSuffix(a, ".conf") {
			args[i] = dropIn
		}
	}
	vpc(t, env, append([]string{"--state-dir", dir}, args...)...).want(t, 0, "maxPods 29")
	if got := mustRead(t, dropIn); !strings.Contains(got, "maxPods: 29\n") {
		t.Errorf("the boot unit's drop-in on an m5.large from a t3.small's state:\n%s", got)
	}
}

// A first pass whose wait for the reconcile lock outlasts --timeout does
// not run: install fails as reconcile --wait does, naming the lock, and
// writes neither state nor conflist; the lock free, the next run completes.
func TestInstallLockHeldRunsNoPass(t *testing.T) {
	_, env := newSim(t, "m5.large")
	root := t.TempDir()
	dir := filepath.Join(root, "var/lib/vpc-cni")
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	unlock, ok, err := st.LockReconcile(false, 0)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	r := vpc(t, env, "install", "--root", root, "--timer", "none", "--skip-iam-check", "--timeout", "1s")
	unlock()
	r.want(t, 1, "another reconcile held the lock", st.ReconcileLockPath(), "conflist is not written")
	for _, p := range []string{"var/lib/vpc-cni/state.db", "etc/cni/net.d/10-vpc-cni.conflist"} {
		if _, err := os.Stat(filepath.Join(root, p)); err == nil {
			t.Errorf("%s written by a pass that had not the lock", p)
		}
	}
	vpc(t, env, "install", "--root", root, "--timer", "none").want(t, 0, "installed  /etc/cni/net.d/10-vpc-cni.conflist")
}
