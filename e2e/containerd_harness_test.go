package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	"golang.org/x/sys/unix"
)

// criToolsVersion is the crictl the tests build from the Go module proxy.
const criToolsVersion = "v1.37.0"

// pauseImage is the sandbox image the tests build and import: no registry is
// reachable, so containerd must never need to pull it.
const pauseImage = "localhost/vpc-cni-e2e/pause:1"

// criNode is Debian's containerd with its CRI plugin, started by the test in
// the node netns with its own root, state, socket and CNI directories, and
// crictl to drive it.
type criNode struct {
	w       *world
	dir     string // everything containerd writes is under here
	sock    string
	crictl  string
	cmd     *exec.Cmd
	exited  chan struct{}
	logPath string
	confDir string
	netnses []string // pod netns paths containerd made, removed at cleanup if still there
}

// criBinaries finds containerd, ctr and runc, or says why the test cannot run.
func criBinaries() (map[string]string, string) {
	paths := map[string]string{}
	for _, name := range []string{"containerd", "containerd-shim-runc-v2", "ctr", "runc"} {
		p, err := exec.LookPath(name)
		if err != nil {
			return nil, name + " is not installed (Debian packages containerd and runc; .ci/run installs them)"
		}
		paths[name] = p
	}
	return paths, ""
}

// startContainerd writes the config, imports the pause image and starts
// containerd in the node netns. Everything is undone at cleanup, pass or fail.
func startContainerd(t *testing.T, w *world, conflist []byte) *criNode {
	t.Helper()
	tools, why := criBinaries()
	if why != "" {
		t.Skip(why)
	}
	crictl := goTool(t, "sigs.k8s.io/cri-tools/cmd/crictl", criToolsVersion, "crictl")
	dir, err := os.MkdirTemp("", "vpc-cni-e2e-cri-")
	if err != nil {
		t.Fatal(err)
	}
	c := &criNode{w: w, dir: dir, sock: filepath.Join(dir, "containerd.sock"), crictl: crictl,
		logPath: filepath.Join(dir, "containerd.log"), confDir: filepath.Join(dir, "net.d"), exited: make(chan struct{})}
	t.Cleanup(c.cleanup)
	if err := os.MkdirAll(c.confDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.confDir, "10-vpc-cni.conflist"), conflist, 0o644); err != nil {
		t.Fatal(err)
	}
	c.writeConfigs(t)
	c.start(t, tools["containerd"])
	c.importImage(t, tools["ctr"])
	c.waitNetworkReady(t)
	return c
}

func (c *criNode) writeConfigs(t *testing.T) {
	t.Helper()
	config := fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.internal.v1.opt",
  "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = %q
[ttrpc]
  address = %q
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  # The sandbox this runs in may not lower oom_score_adj (runc's "failed to
  # update /proc/self/oom_score_adj"): keep pods at or above containerd's.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        Root = %q
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = %q
    max_conf_num = 1
`, filepath.Join(c.dir, "root"), filepath.Join(c.dir, "state"), c.sock, c.sock+".ttrpc",
		pauseImage, filepath.Join(c.dir, "runc"), binDir, c.confDir)
	crictlConf := fmt.Sprintf("runtime-endpoint: unix://%s\nimage-endpoint: unix://%s\ntimeout: 60\n", c.sock, c.sock)
	for name, body := range map[string]string{"config.toml": config, "crictl.yaml": crictlConf} {
		if err := os.WriteFile(filepath.Join(c.dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// start runs containerd from a thread in the node netns (it and the CNI
// plugins it execs inherit it) and waits for its "booted" line.
func (c *criNode) start(t *testing.T, containerd string) {
	t.Helper()
	cmd := exec.Command(containerd, "--config", filepath.Join(c.dir, "config.toml"), "--log-level", "info")
	cmd.Env = os.Environ()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	log, err := os.Create(c.logPath)
	if err != nil {
		t.Fatal(err)
	}
	c.w.inNode(func() error { return cmd.Start() })
	c.cmd = cmd
	booted := make(chan struct{})
	go func() {
		defer log.Close()
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		once := false
		for sc.Scan() {
			fmt.Fprintln(log, sc.Text())
			if !once && strings.Contains(sc.Text(), "containerd successfully booted") {
				once = true
				close(booted)
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		_ = cmd.Wait()
		close(c.exited)
	}()
	select {
	case <-booted:
	case <-c.exited:
		t.Fatalf("containerd exited before it booted:\n%s", c.logTail())
	case <-time.After(time.Minute):
		t.Fatalf("containerd did not boot in a minute:\n%s", c.logTail())
	}
}

// importImage packs the pause image and imports it into the CRI namespace.
func (c *criNode) importImage(t *testing.T, ctr string) {
	t.Helper()
	tarball := filepath.Join(c.dir, "pause.tar")
	writePauseImage(t, tarball, pauseImage)
	out, err := exec.Command(ctr, "--address", c.sock, "-n", "k8s.io", "images", "import",
		"--snapshotter", "overlayfs", tarball).CombinedOutput()
	if err != nil {
		t.Fatalf("ctr images import: %v\n%s", err, out)
	}
}

// waitNetworkReady waits until the CRI plugin has loaded the conflist:
// `crictl info` reports NetworkReady (its config syncer works in the
// background after boot).
func (c *criNode) waitNetworkReady(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		out, err := c.run("info")
		if err == nil {
			var info struct {
				Status struct {
					Conditions []struct {
						Type   string `json:"type"`
						Status bool   `json:"status"`
					} `json:"conditions"`
				} `json:"status"`
			}
			if json.Unmarshal(out, &info) == nil {
				for _, cond := range info.Status.Conditions {
					if cond.Type == "NetworkReady" && cond.Status {
						return
					}
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the CRI plugin did not report NetworkReady in a minute: %v %s\n%s", err, out, c.logTail())
		}
		select {
		case <-tick.C:
		case <-c.exited:
			t.Fatalf("containerd exited:\n%s", c.logTail())
		}
	}
}

// run is one crictl command; stdout only (crictl logs to stderr).
func (c *criNode) run(args ...string) ([]byte, error) {
	cmd := exec.Command(c.crictl, append([]string{"--config", filepath.Join(c.dir, "crictl.yaml")}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("crictl %s: %v: %s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out, nil
}

func (c *criNode) logTail() string {
	b, _ := os.ReadFile(c.logPath)
	if len(b) > 6000 {
		b = b[len(b)-6000:]
	}
	return string(b)
}

// cleanup removes every pod, stops containerd (its pid, then its process
// group), the shims serving this containerd, and unmounts and removes what
// it left, pass or fail.
func (c *criNode) cleanup() {
	if c.cmd != nil && c.cmd.Process != nil {
		select {
		case <-c.exited:
		default:
			c.recordNetnses()
			if out, err := c.run("rmp", "--all", "--force"); err != nil {
				fmt.Fprintf(os.Stderr, "e2e cleanup: %v %s\n", err, out)
			}
			_ = c.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-c.exited:
			case <-time.After(30 * time.Second):
				_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
				<-c.exited
			}
		}
	}
	for _, pid := range shimsOf(c.sock) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		waitPidGone(pid, 10*time.Second)
	}
	unmountUnder(c.dir)
	removeCgroups(c.cgroupParent())
	for _, p := range c.netnses {
		if _, err := os.Stat(p); err == nil {
			_ = unix.Unmount(p, unix.MNT_DETACH)
			_ = os.Remove(p)
		}
	}
	if err := os.RemoveAll(c.dir); err != nil {
		fmt.Fprintf(os.Stderr, "e2e cleanup: %v\n", err)
	}
}

// recordNetnses adds the netns of every sandbox containerd still lists (a
// failed runp leaves one behind that it cannot remove) to those cleanup
// removes.
func (c *criNode) recordNetnses() {
	out, err := c.run("pods", "--quiet")
	if err != nil {
		return
	}
	for _, id := range strings.Fields(string(out)) {
		if path, _, err := c.inspect(id); err == nil {
			c.netnses = append(c.netnses, path)
		}
	}
}

// cgroupParent is where runc puts the pods' cgroups: one per containerd, so
// cleanup removes exactly what this test made.
func (c *criNode) cgroupParent() string { return "/" + filepath.Base(c.dir) }

// removeCgroups removes the (empty) cgroup dir parent and its children in
// every hierarchy.
func removeCgroups(parent string) {
	roots, _ := filepath.Glob("/sys/fs/cgroup/*")
	for _, root := range append(roots, "/sys/fs/cgroup") {
		dir := filepath.Join(root, parent)
		kids, _ := os.ReadDir(dir)
		for _, k := range kids {
			if k.IsDir() {
				_ = os.Remove(filepath.Join(dir, k.Name()))
			}
		}
		_ = os.Remove(dir)
	}
}

// shimsOf lists the containerd-shim processes started for this containerd:
// their command line names its socket.
func shimsOf(sock string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if strings.HasPrefix(filepath.Base(args[0]), "containerd-shim") && strings.Contains(string(cmdline), sock) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitPidGone waits for a process that is not our child to exit (pidfd).
func waitPidGone(pid int, limit time.Duration) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return true // already gone
	}
	defer unix.Close(fd)
	n, _ := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(limit.Milliseconds()))
	return n == 1
}

// unmountUnder lazily unmounts every mount point under dir, deepest first.
func unmountUnder(dir string) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var points []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			points = append(points, f[4])
		}
	}
	for i := len(points) - 1; i >= 0; i-- {
		_ = unix.Unmount(points[i], unix.MNT_DETACH)
	}
}

// criPod is one sandbox run through crictl, seen as the tests' pod.
type criPod struct {
	*pod
	ip  string   // what the CRI plugin reports
	ips []string // ip and the additional IPs (a dual-stack pod's second family)
}

// runPod runs a sandbox for namespace/name and reads back its netns and IP.
func (c *criNode) runPod(t *testing.T, namespace, name string) *criPod {
	t.Helper()
	return c.runPodAnnotated(t, namespace, name, nil)
}

// runPodAnnotated is runPod for a sandbox with annotations, which
// containerd passes to a plugin that declares the capability.
func (c *criNode) runPodAnnotated(t *testing.T, namespace, name string, annotations map[string]string) *criPod {
	t.Helper()
	cfg := map[string]any{
		"metadata":      map[string]any{"name": name, "namespace": namespace, "uid": "uid-" + name, "attempt": 0},
		"hostname":      name,
		"log_directory": filepath.Join(c.dir, "logs", name),
		"linux":         map[string]any{"cgroup_parent": c.cgroupParent()},
	}
	if annotations != nil {
		cfg["annotations"] = annotations
	}
	path := filepath.Join(c.dir, "pod-"+name+".json")
	if err := os.WriteFile(path, mustJSON(t, cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := c.run("runp", path)
	if err != nil {
		t.Fatalf("%v\n%s", err, c.logTail())
	}
	id := strings.TrimSpace(string(out))
	netnsPath, ips, err := c.inspect(id)
	if err != nil {
		t.Fatal(err)
	}
	ip := ips[0]
	c.netnses = append(c.netnses, netnsPath)
	n, err := ns.GetNS(netnsPath)
	if err != nil {
		t.Fatalf("pod %s netns %s: %v", name, netnsPath, err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return &criPod{pod: &pod{ns: n, namespace: namespace, name: name, id: id, ifname: "eth0"}, ip: ip, ips: ips}
}

// inspect reads a sandbox's netns path and IPs (the first, then the
// additional ones) from `crictl inspectp`.
func (c *criNode) inspect(id string) (netnsPath string, ips []string, err error) {
	out, err := c.run("inspectp", id)
	if err != nil {
		return "", nil, err
	}
	var v struct {
		Status struct {
			Network struct {
				IP            string `json:"ip"`
				AdditionalIPs []struct {
					IP string `json:"ip"`
				} `json:"additionalIps"`
			} `json:"network"`
		} `json:"status"`
		Info struct {
			RuntimeSpec struct {
				Linux struct {
					Namespaces []struct {
						Type string `json:"type"`
						Path string `json:"path"`
					} `json:"namespaces"`
				} `json:"linux"`
			} `json:"runtimeSpec"`
		} `json:"info"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		return "", nil, fmt.Errorf("crictl inspectp %s: %v\n%s", id, err, out)
	}
	for _, n := range v.Info.RuntimeSpec.Linux.Namespaces {
		if n.Type == "network" {
			netnsPath = n.Path
		}
	}
	if netnsPath == "" {
		return "", nil, fmt.Errorf("crictl inspectp %s names no network namespace:\n%s", id, out)
	}
	ips = []string{v.Status.Network.IP}
	for _, a := range v.Status.Network.AdditionalIPs {
		ips = append(ips, a.IP)
	}
	return netnsPath, ips, nil
}
