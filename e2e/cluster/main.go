//go:build cluster

// Command vpc-cni-cluster brings up a Kubernetes cluster in namespaces on
// this machine: etcd and the control plane in one network namespace, two
// worker nodes (containerd 2.x and a kubelet each) on the built-in EC2
// emulator with one simulated VPC between them, and vpc-cni installed by its
// Helm chart's DaemonSet. Everything it makes is under --dir; `down` removes
// it. See docs/development.md ("A cluster in a box").
//
//	vpc-cni-cluster build [--dir D]         (only build and cache every binary: CI bounds this step's time)
//	vpc-cni-cluster up [--dir D] [--detach]
//	vpc-cni-cluster down [--dir D]
//	vpc-cni-cluster conformance [--dir D]   (upstream networking checks against a cluster that is up)
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"vpc-cni/internal/ociimage"
	"vpc-cni/internal/testsupport/clusterhost"
	"vpc-cni/sim/ec2sim"
)

const instanceType = "t3.medium"

var netOnly *bool

type cluster struct {
	dir, repo  string
	log        io.Writer
	tools      tools
	cgroups    clusterhost.Cgroups
	pki        *pki
	procs      *procs
	holders    []*holder
	ctl        *holder
	nodes      []*node
	images     []string
	maxPods    int
	kubeconfig string
	proxy      io.Closer
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: vpc-cni-cluster build|up|down|conformance [--dir DIR] [--detach]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	dir := fs.String("dir", "/tmp/vpc-cni-cluster", "where everything the cluster makes lives")
	netOnly = fs.Bool("net-only", false, "up: only the VPC and the nodes' namespaces and emulators (debugging)")
	detach := fs.Bool("detach", false, "up: run in the background, return once the cluster is ready")
	_ = fs.Parse(os.Args[2:])
	var err error
	switch os.Args[1] {
	case "up":
		if *detach {
			err = upDetached(*dir)
		} else {
			err = up(*dir)
		}
	case "build":
		err = buildOnly(*dir)
	case "down":
		err = down(*dir)
	case "conformance":
		err = conformance(*dir)
	default:
		fmt.Fprintf(os.Stderr, "vpc-cni-cluster: unknown command %q (build, up, down or conformance)\n", os.Args[1])
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "vpc-cni-cluster:", err)
		os.Exit(1)
	}
}

// buildOnly builds (or finds cached) every binary a cluster runs.
func buildOnly(dir string) error {
	repo, err := repoRoot()
	if err != nil {
		return err
	}
	t0 := time.Now()
	if _, err := buildTools(repo, dir, os.Stderr, false); err != nil {
		return err
	}
	fmt.Printf("built in %s (cached in ~/.cache/vpc-cni-e2e)\n", time.Since(t0).Round(time.Second))
	return nil
}

// upDetached starts `up` in its own session with its output in DIR/up.log
// and waits for DIR/ready (or its exit).
func upDetached(dir string) error {
	if b, err := os.ReadFile(filepath.Join(dir, "up.pid")); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && syscall.Kill(pid, 0) == nil {
			return fmt.Errorf("%s holds a running cluster already (make cluster-down)", dir)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(dir, "up.log"))
	if err != nil {
		return err
	}
	self, _ := os.Executable()
	cmd := exec.Command(self, "up", "--dir", dir)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	for {
		select {
		case err := <-exited:
			b, _ := os.ReadFile(logf.Name())
			return fmt.Errorf("up exited (%v):\n%s", err, b)
		case <-time.After(time.Second):
		}
		if _, err := os.Stat(filepath.Join(dir, "ready")); err == nil {
			fmt.Printf("cluster up in %s (log %s)\nexport KUBECONFIG=%s\n", time.Since(start).Round(time.Second),
				logf.Name(), filepath.Join(dir, "admin.kubeconfig"))
			return nil
		}
	}
}

func up(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	_ = os.WriteFile(filepath.Join(dir, "up.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644)
	repo, err := repoRoot()
	if err != nil {
		return err
	}
	c := &cluster{dir: dir, repo: repo, log: os.Stderr, procs: &procs{dir: dir},
		kubeconfig: filepath.Join(dir, "admin.kubeconfig")}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	err = c.bringUp(stop)
	if err == nil {
		c.step("ready")
		_ = os.WriteFile(filepath.Join(dir, "ready"), nil, 0o644)
		c.serve(stop)
	}
	c.teardown()
	return err
}

func (c *cluster) step(format string, args ...any) {
	fmt.Fprintf(c.log, "%s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func (c *cluster) bringUp(stop chan os.Signal) error {
	var err error
	if c.cgroups, err = hostCgroups(); err != nil {
		return err
	}
	c.step("%s", c.cgroups.Hierarchy)
	t0 := time.Now()
	c.step("building (cached in ~/.cache/vpc-cni-e2e)")
	if c.tools, err = buildTools(c.repo, c.dir, c.log, *netOnly); err != nil {
		return err
	}
	c.step("built in %s", time.Since(t0).Round(time.Second))
	if err := c.makePKI(); err != nil {
		return err
	}
	if err := c.makeImages(); err != nil {
		return err
	}
	if c.maxPods, err = c.vpcctlMaxPods(); err != nil {
		return err
	}
	if err := c.makeNetwork(); err != nil {
		return err
	}
	for _, n := range c.nodes {
		if err := n.startNamespaces(c); err != nil {
			return fmt.Errorf("%s: %w", n.name, err)
		}
	}
	go c.syncVPC(stop)
	if *netOnly {
		return nil
	}
	t1 := time.Now()
	if err := c.startControlPlane(); err != nil {
		return err
	}
	c.step("control plane up in %s", time.Since(t1).Round(time.Second))
	for _, n := range c.nodes {
		if err := n.start(c); err != nil {
			return fmt.Errorf("%s: %w", n.name, err)
		}
	}
	return c.installWorkloads()
}

// installWorkloads applies what runs on the nodes (vpc-cni from its chart,
// kube-proxy, and with CLUSTER_POLICY=1 the policy controller and CoreDNS)
// and waits until the nodes and those are ready.
func (c *cluster) installWorkloads() error {
	if err := c.installPolicyCRDs(); err != nil {
		return err
	}
	if err := c.installVPCCNI(); err != nil {
		return err
	}
	if err := c.installKubeProxy(); err != nil {
		return err
	}
	if err := c.installPolicyControllerAndDNS(); err != nil {
		return err
	}
	if err := c.waitNodesReady(5 * time.Minute); err != nil {
		return err
	}
	return c.waitPolicyReady()
}

func (c *cluster) makePKI() error {
	var err error
	if c.pki, err = newPKI(filepath.Join(c.dir, "pki")); err != nil {
		return err
	}
	issue := [][]string{
		{"apiserver", "kube-apiserver", "", "127.0.0.1", ctlIP.String(), "100.120.0.1", "localhost", "kubernetes",
			"kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		{"apiserver-kubelet", "kube-apiserver-kubelet-client", "system:masters"},
		{"admin", "admin", "system:masters"},
		{"kube-controller-manager", "system:kube-controller-manager", ""},
		{"kube-scheduler", "system:kube-scheduler", ""},
	}
	for i := 1; i <= 2; i++ {
		name := fmt.Sprintf("node%d", i)
		issue = append(issue, []string{name, "system:node:" + name, "system:nodes", nodePrimary(i).String(), name})
	}
	for _, is := range issue {
		var orgs []string
		if is[2] != "" {
			orgs = []string{is[2]}
		}
		if err := c.pki.issue(is[0], is[1], orgs, is[3:]...); err != nil {
			return err
		}
	}
	if err := c.pki.serviceAccountKey(); err != nil {
		return err
	}
	return nil
}

// The nodes' subnets: node1 100.64.0.0/20, node2 100.64.16.0/20.
func nodeSubnet(i int) netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{100, 64, byte(16 * (i - 1)), 0}), 20)
}
func nodeGateway(i int) netip.Addr { return nodeSubnet(i).Addr().Next() }

// nodePrimary is the address the emulator gives the primary ENI first: its
// subnet's first free one after the reserved four.
func nodePrimary(i int) netip.Addr {
	a := nodeSubnet(i).Addr()
	for range 4 {
		a = a.Next()
	}
	return a
}

func (c *cluster) makeNetwork() error {
	var err error
	if c.ctl, err = newHolder("ctl", []string{"--net"}, "true"); err != nil {
		return err
	}
	c.addHolder(c.ctl)
	var routers [2]*holder
	for i := range routers {
		if routers[i], err = newHolder(fmt.Sprintf("vpc%d", i+1), []string{"--net"}, "true"); err != nil {
			return err
		}
		c.addHolder(routers[i])
		if err := sysctls(routers[i].netns(), routerSysctls); err != nil {
			return err
		}
	}
	for _, s := range []error{
		loUp(c.ctl.netns()), loUp(routers[0].netns()), loUp(routers[1].netns()),
		veth(c.ctl.netns(), "eth0", ctlIP, routers[0].netns(), "ctl0", ctlGW, 24),
		routeVia(c.ctl.netns(), netip.Prefix{}, ctlGW),
		veth(routers[0].netns(), "peer0", transit[0], routers[1].netns(), "peer0", transit[1], 30),
		routeVia(routers[0].netns(), nodeSubnet(2), transit[1]),
		routeVia(routers[1].netns(), nodeSubnet(1), transit[0]),
		routeVia(routers[1].netns(), netip.MustParsePrefix("100.64.250.0/24"), transit[0]),
	} {
		if s != nil {
			return s
		}
	}
	for i := 1; i <= 2; i++ {
		n := &node{dir: filepath.Join(c.dir, fmt.Sprintf("node%d", i))}
		n.name, n.subnet, n.gateway, n.router = fmt.Sprintf("node%d", i), nodeSubnet(i), nodeGateway(i), routers[i-1]
		n.instance = fmt.Sprintf("i-0c1a57e400000000%d", i)
		c.nodes = append(c.nodes, n)
	}
	// The control plane's addresses: the API server answers the machine through a socket here.
	addr, closer, err := proxy(c.ctl.netns(), netip.AddrPortFrom(ctlIP, 6443))
	if err != nil {
		return err
	}
	c.proxy = closer
	return c.pki.kubeconfig(c.kubeconfig, "admin", "https://"+addr)
}

// newSim is the node's emulator; its ENI links appear in the node's netns
// with their other ends in the node's router.
func (n *node) newSim() error {
	sim, err := ec2sim.New(ec2sim.Config{InstanceType: instanceType, InstanceID: n.instance, SubnetCIDR: n.subnet,
		LinkNetns: n.holder.netns(), LinkPeerNetns: n.router.netns()})
	if err != nil {
		return err
	}
	n.sim = sim
	n.primary = sim.State().ENIs[0].PrimaryIP
	return nil
}

// syncVPC keeps the routers' routes in step with the emulators' ENIs.
func (c *cluster) syncVPC(stop chan os.Signal) {
	for {
		for _, n := range c.nodes {
			if err := n.syncRouter(); err != nil {
				c.step("vpc sync %s: %v", n.name, err)
			}
		}
		select {
		case s := <-stop:
			stop <- s
			return
		case <-time.After(300 * time.Millisecond):
		}
	}
}

func (c *cluster) makeImages() error {
	dir := filepath.Join(c.dir, "images")
	pause, err := goProgram(dir, "pause", pauseSource)
	if err != nil {
		return err
	}
	probe, err := goProgram(dir, "probe", probeSource)
	if err != nil {
		return err
	}
	vpcctl, err := os.ReadFile(c.tools.vpcctl)
	if err != nil {
		return err
	}
	// The DaemonSet's pods find their node's emulator (127.0.0.1 in the node's netns) through the image's environment.
	simEnv := []string{"AWS_REGION=us-west-2", "AWS_ENDPOINT_URL_EC2=http://" + simListen,
		"AWS_EC2_METADATA_SERVICE_ENDPOINT=http://" + simListen, "AWS_ACCESS_KEY_ID=AKIDEC2SIM",
		"AWS_SECRET_ACCESS_KEY=ec2sim-secret", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null"}
	arch := goruntime.GOARCH
	images := []ociimage.Image{
		{Ref: pauseRef, Arch: arch, Files: map[string]ociimage.File{"pause": exe(pause)}, Entrypoint: []string{"/pause"}},
		{Ref: probeRef, Arch: arch, Files: map[string]ociimage.File{"probe": exe(probe)}, Entrypoint: []string{"/probe", "serve"}},
		{Ref: vpcCNIRef, Arch: arch, Files: map[string]ociimage.File{"usr/local/bin/vpcctl": exe(vpcctl)},
			Entrypoint: []string{"/usr/local/bin/vpcctl"}, Env: append([]string{"PATH=/usr/local/bin"}, simEnv...)},
	}
	if !*netOnly {
		kp, err := c.kubeProxyImage()
		if err != nil {
			return err
		}
		images = append(images, kp)
	}
	if policyOn() {
		more, err := c.policyImages(simEnv)
		if err != nil {
			return err
		}
		images = append(images, more...)
	}
	return c.writeImages(dir, images)
}

// writeImages writes each image as an archive in dir, for the nodes to import.
func (c *cluster) writeImages(dir string, images []ociimage.Image) error {
	for _, im := range images {
		b, err := im.Archive()
		if err != nil {
			return err
		}
		path := filepath.Join(dir, strings.ReplaceAll(filepath.Base(im.Ref), ":", "-")+".tar")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return err
		}
		c.images = append(c.images, path)
	}
	return nil
}

func (c *cluster) vpcctlMaxPods() (int, error) {
	out, err := exec.Command(c.tools.vpcctl, "max-pods", "--instance-type", instanceType).Output()
	if err != nil {
		return 0, fmt.Errorf("vpcctl max-pods: %v", err)
	}
	f := strings.Fields(string(out)) // MAX PODS  17
	if len(f) < 3 {
		return 0, errors.New("vpcctl max-pods printed nothing")
	}
	return strconv.Atoi(f[2])
}

func (c *cluster) ctr() string { return filepath.Join(c.tools.containerd, "ctr") }

// kubectl runs kubectl with the admin kubeconfig.
func (c *cluster) kubectl(args ...string) error {
	_, err := c.kubectlOut(nil, args...)
	return err
}

func (c *cluster) kubectlOut(stdin []byte, args ...string) ([]byte, error) {
	cmd := exec.Command(c.tools.k("kubectl"), append([]string{"--kubeconfig", c.kubeconfig}, args...)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, errb.String())
	}
	return out, nil
}

// installVPCCNI renders the chart as a user would (helm template) with the
// local image, and applies it.
func (c *cluster) installVPCCNI() error {
	args := []string{"template", "vpc-cni", filepath.Join(c.repo, "deploy/helm/vpc-cni"),
		"--namespace", "kube-system", "--set", "image.repository=" + strings.Split(vpcCNIRef, ":")[0],
		"--set", "image.tag=" + strings.Split(vpcCNIRef, ":")[1], "--set", "image.pullPolicy=Never"}
	manifest, err := exec.Command(c.tools.helm, append(args, policyChartValues()...)...).Output()
	if err != nil {
		return fmt.Errorf("helm template: %v", err)
	}
	if err := os.WriteFile(filepath.Join(c.dir, "vpc-cni.yaml"), manifest, 0o644); err != nil {
		return err
	}
	_, err = c.kubectlOut(manifest, "apply", "-f", "-")
	return err
}

func (c *cluster) waitNodesReady(timeout time.Duration) error {
	t0 := time.Now()
	var stuck string
	err := waitFor("2 Ready nodes", nil, timeout, func() bool {
		out, err := c.kubectlOut(nil, "get", "nodes", "-o",
			`jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`)
		if err == nil && strings.Count(string(out), "=True") == 2 {
			return true
		}
		stuck = c.podsCannotStart()
		return stuck != ""
	})
	if err == nil && stuck != "" {
		err = fmt.Errorf("2 Ready nodes: the nodes' pods cannot start (%s)", stuck)
	}
	if err != nil {
		return fmt.Errorf("%w\n%s", err, c.whyNotReady())
	}
	c.step("nodes Ready %s after the kubelets started", time.Since(t0).Round(time.Second))
	return nil
}

// serve keeps the cluster up until SIGTERM or SIGINT.
func (c *cluster) serve(stop chan os.Signal) {
	s := <-stop
	stop <- s
}

func repoRoot() (string, error) {
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return "", fmt.Errorf("run from the repository: %v", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// addHolder records a namespace holder, in DIR/holders too (for a down after a dead up).
func (c *cluster) addHolder(h *holder) {
	c.holders = append(c.holders, h)
	var b strings.Builder
	for _, h := range c.holders {
		fmt.Fprintf(&b, "%d %s\n", h.pid, h.name)
	}
	_ = os.WriteFile(filepath.Join(c.dir, "holders"), []byte(b.String()), 0o644)
}
