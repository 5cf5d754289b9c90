//go:build cluster

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// A worker node: a network namespace and a private mount namespace (the
// holder) in which /etc, /opt, /var/lib and /var/log are overlays whose
// writes land in the node's dir, /run is a fresh tmpfs, and the kernel
// tunables the kubelet insists on are files of its own: the chart's
// hostPaths (/etc/cni/net.d, /opt/cni/bin, /var/lib/vpc-cni, /var/run/netns)
// and containerd's /run/containerd are the node's, never the machine's.
type node struct {
	nodeNet
	dir     string
	holder  *holder
	ctrd    *proc
	kubelet *proc
}

// kubeletTunables are the sysctls the kubelet sets (or, protecting kernel
// defaults, checks): machine-wide, so each node gets files in their place.
var kubeletTunables = map[string]string{"vm/overcommit_memory": "1", "vm/panic_on_oom": "0", "kernel/panic": "10",
	"kernel/panic_on_oops": "1", "kernel/keys/root_maxkeys": "1000000", "kernel/keys/root_maxbytes": "25000000"}

func (n *node) mountScript() string {
	var b strings.Builder
	for _, d := range []string{"etc", "opt", "var/lib", "var/log"} {
		ov := filepath.Join(n.dir, "overlay", strings.ReplaceAll(d, "/", "-"))
		fmt.Fprintf(&b, "mkdir -p %s/upper %s/work\nmount -t overlay overlay -o lowerdir=/%s,upperdir=%s/upper,workdir=%s/work /%s\n",
			ov, ov, d, ov, ov, d)
	}
	b.WriteString("mount -t tmpfs tmpfs /run\nmkdir -p /run/netns /run/containerd /etc/cni/net.d /opt/cni/bin /etc/vpc-cni /var/lib/vpc-cni\n")
	for k, v := range kubeletTunables {
		f := filepath.Join(n.dir, "sysctl", strings.ReplaceAll(k, "/", "."))
		fmt.Fprintf(&b, "mkdir -p %s\necho %s > %s\nmount --bind %s /proc/sys/%s\n", filepath.Dir(f), v, f, f, k)
	}
	b.WriteString(policyMounts())
	b.WriteString("mount --make-rshared /\n")
	return b.String()
}

// containerdConfig runs pods with runc, the machine's (scripts/prereqs.sh
// says how to install it).
func (n *node) containerdConfig(runc string) string {
	return fmt.Sprintf(`version = 3
root = %q
state = "/run/containerd"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.erofs", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = "/run/containerd/containerd.sock"
[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = %q
[plugins.'io.containerd.cri.v1.runtime']
  enable_selinux = false
  # The machine's sandbox may not lower oom_score_adj.
  restrict_oom_score_adj = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = %q
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["/opt/cni/bin"]
    conf_dir = "/etc/cni/net.d"
    max_conf_num = 1
[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
`, filepath.Join(n.dir, "containerd"), pauseRef, runc)
}

// kubeletConfig has no maxPods: the boot unit's drop-in in
// kubeletConfigDir sets it, as on a node.
func (n *node) kubeletConfig(c *cluster) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %s
port: 10250
readOnlyPort: 0
healthzPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %s}
authorization: {mode: Webhook}
cgroupDriver: cgroupfs
cgroupRoot: /%s
failCgroupV1: false
failSwapOn: false
protectKernelDefaults: true
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
resolvConf: /etc/resolv.conf
evictionHard: {memory.available: "1Mi", nodefs.available: "1%%", imagefs.available: "1%%", nodefs.inodesFree: "1%%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
localStorageCapacityIsolation: false
tlsCertFile: %s
tlsPrivateKeyFile: %s
%s`, n.primary, c.pki.path("ca.crt"), n.cgroupRoot(), c.pki.path(n.name+".crt"), c.pki.path(n.name+".key"), policyKubelet())
}

// startNamespaces makes the node's namespaces and starts its emulator.
func (n *node) startNamespaces(c *cluster) error {
	var err error
	if n.holder, err = newHolder(n.name, []string{"--net", "--mount", "--propagation", "private"}, n.mountScript()); err != nil {
		return err
	}
	c.addHolder(n.holder)
	if err := n.newSim(); err != nil {
		return err
	}
	return n.setup(n.holder.netns())
}

// start brings up containerd (with the images) and the kubelet.
func (n *node) start(c *cluster) error {
	if err := makeCgroups(c.cgroups.Dirs(n.cgroupRoot())); err != nil {
		return err
	}
	// containerd's CRI sets up each pod's lo with the loopback plugin;
	// portmap and bandwidth are there before vpc-cni's install looks.
	for _, p := range nodePlugins {
		name := filepath.Base(p)
		if out, err := n.exec("cp", filepath.Join(filepath.Dir(c.tools.loopback), name), "/opt/cni/bin/"+name); err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
	}
	runc, err := exec.LookPath("runc")
	if err != nil {
		return fmt.Errorf("containerd runs pods with runc: %w (apt-get install runc)", err)
	}
	conf := filepath.Join(n.dir, "containerd.toml")
	if err := writeFile(conf, n.containerdConfig(runc)); err != nil {
		return err
	}
	// The plugin, run by containerd, finds the node's EC2 and IMDS through this environment.
	// Its own shim first on PATH, not Debian's containerd 1.6 one.
	env := append(n.sim.Env(), "PATH="+c.tools.containerd+":"+os.Getenv("PATH"))
	if n.ctrd, err = c.procs.start(n.name+"-containerd", n.holder.pid, true, env,
		filepath.Join(c.tools.containerd, "containerd"), "--config", conf); err != nil {
		return err
	}
	if err := waitFor("containerd", n.ctrd, time.Minute, func() bool {
		_, err := n.exec(c.ctr(), "--address", "/run/containerd/containerd.sock", "version")
		return err == nil
	}); err != nil {
		return err
	}
	for _, img := range c.images {
		if out, err := n.exec(c.ctr(), "--address", "/run/containerd/containerd.sock", "-n", "k8s.io", "images", "import",
			"--snapshotter", "overlayfs", img); err != nil {
			return fmt.Errorf("importing %s: %v\n%s", img, err, out)
		}
	}
	if err := n.boot(c); err != nil {
		return err
	}
	return n.startKubelet(c)
}

func (n *node) startKubelet(c *cluster) error {
	conf := filepath.Join(n.dir, "kubelet.yaml")
	if err := writeFile(conf, n.kubeletConfig(c)); err != nil {
		return err
	}
	kc := filepath.Join(n.dir, "kubelet.kubeconfig")
	if err := c.pki.kubeconfig(kc, n.name, "https://"+ctlIP.String()+":6443"); err != nil {
		return err
	}
	var err error
	n.ctrd.markNow("the kubelet started")
	n.kubelet, err = c.procs.start(n.name+"-kubelet", n.holder.pid, true, nil, c.tools.k("kubelet"),
		"--config", conf, "--config-dir", kubeletConfigDir, "--kubeconfig", kc, "--root-dir", filepath.Join(n.dir, "kubelet"),
		"--hostname-override", n.name, "--node-ip", n.primary.String(), "--v", "2")
	return err
}

// exec runs a command inside the node's namespaces and waits for it.
func (n *node) exec(argv ...string) ([]byte, error) {
	args := append([]string{"--target", strconv.Itoa(n.holder.pid), "--net", "--mount", "--"}, argv...)
	return exec.Command("nsenter", args...).CombinedOutput()
}
