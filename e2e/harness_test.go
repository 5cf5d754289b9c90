package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"vpc-cni/internal/testsupport/simtest"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"

	"vpc-cni/internal/testsupport/testenv"
	"vpc-cni/settings"
	"vpc-cni/sim/ec2sim"
	"vpc-cni/store"
)

// origNS is the namespace the test process started in: set-up refuses to
// change it.
var origNS vnetns.NsHandle

// binDir holds vpcctl, its vpc-cni symlink and the reference plugins, built
// once by TestMain when it runs as root.
var binDir string

// needsRoot is why every e2e test needs root (testenv.RequireRoot).
const needsRoot = "e2e tests create network namespaces (run as root, e.g. `sudo -E go test ./e2e`)"

// refPlugins are the containernetworking/plugins binaries the tests chain
// with or compare against, built from the module cache at go.mod's version.
var refPlugins = []string{
	"meta/portmap", "meta/bandwidth", "meta/tuning", "meta/sbr",
	"main/ptp", "main/bridge", "main/loopback", "ipam/host-local", // loopback: containerd's CRI plugin sets up lo with it
}

func TestMain(m *testing.M) {
	if !testenv.IsRoot() {
		os.Exit(testenv.Run(m)) // every test skips (testenv.RequireRoot)
	}
	var err error
	if origNS, err = vnetns.Get(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	dir, err := os.MkdirTemp("", "vpc-cni-e2e-bin-")
	if err == nil {
		err = buildBinaries(dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: building binaries:", err)
		os.Exit(1)
	}
	binDir = dir
	code := testenv.Run(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

// refLDFlags are the flags of containernetworking/plugins' release workflow
// (.github/workflows/release.yaml: CGO_ENABLED=0, a static link, the version
// stamped, no -trimpath), stripped as well (-s -w, as vpcctl is), so the
// benchmarks compare with binaries as users install them.
func refLDFlags(goBin string) (string, error) {
	const mod = "github.com/containernetworking/plugins"
	v, err := exec.Command(goBin, "list", "-m", "-f", "{{.Version}}", mod).Output()
	if err != nil {
		return "", fmt.Errorf("go list -m %s: %v", mod, err)
	}
	return "-s -w -extldflags -static -X " + mod + "/pkg/utils/buildversion.BuildVersion=" + strings.TrimSpace(string(v)), nil
}

// buildBinaries builds vpcctl with the Makefile's own flags (so benchmarks
// measure the binary that ships) and the reference plugins next to it.
func buildBinaries(dir string) error {
	goBin := goBinary()
	gomod, err := exec.Command(goBin, "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("go env GOMOD: %v", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	if err := run1("make", "-C", root, "build", "BIN="+dir, "VERSION=e2e", "COMMIT=e2e", "GO="+goBin); err != nil {
		return err
	}
	ldflags, err := refLDFlags(goBin)
	if err != nil {
		return err
	}
	args := []string{"build", "-o", dir + "/", "-ldflags", ldflags}
	for _, p := range refPlugins {
		args = append(args, "github.com/containernetworking/plugins/plugins/"+p)
	}
	if err := run1(goBin, args...); err != nil {
		return err
	}
	return installCopies(dir)
}

// installCopies rewrites every binary in dir through write(2), as a node's
// installer copies plugins into /opt/cni/bin. The linker writes its output
// through a shared mapping, and a binary whose page cache was filled that
// way starts measurably slower (an ADD by about 2 ms here, even with the
// same bytes), which would skew the benchmarks against whoever was built
// last.
func installCopies(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := os.WriteFile(path+".new", data, 0o755); err != nil {
			return err
		}
		if err := os.Rename(path+".new", path); err != nil {
			return err
		}
	}
	return nil
}

func run1(name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

func bin(name string) string { return filepath.Join(binDir, name) }

// world is one simulated node: its netns, the EC2/IMDS emulator listening on
// 127.0.0.1 inside it, and a state dir. The AWS environment pointing at the
// emulator is set in the test process (t.Setenv), which every plugin and
// vpcctl process inherits, libcni's included.
type world struct {
	tb       testing.TB
	node     ns.NetNS
	sim      *ec2sim.Sim
	stateDir string
	nodeIP   netip.Addr // the primary ENI's address, on the node's lo
	pods     atomic.Int64
	// expectFailed: a failed step whose text holds this is expected (a
	// subnet found full before discovery moves growth elsewhere).
	expectFailed string
}

// worldOpts shape a world: the instance type and the pool targets of the
// first reconcile (e.g. "WARM_IP_TARGET=100").
type worldOpts struct {
	instanceType string
	env          []string
	peerNetns    string                     // the ENI links' other ends go there (a simulated VPC; see vpcnet_test.go)
	fresh        bool                       // no first reconcile: a node another CNI serves (see migrate_test.go)
	prepare      func(*ec2sim.Sim) []string // shapes the emulator before the first pass; returns knobs to add (subnets_test.go)
	expectFailed string                     // see world.expectFailed
	instanceID   string                     // another instance than the emulator's default (identity_test.go)
	subnet       netip.Prefix               // the node's subnet, in 100.64.0.0/16 (default 100.64.0.0/20)
}

func newWorld(tb testing.TB, o worldOpts) *world {
	tb.Helper()
	testenv.RequireRoot(tb, needsRoot)
	w := &world{tb: tb, node: testenv.NewNetNS(tb), stateDir: tb.TempDir(), expectFailed: o.expectFailed}
	sim, err := ec2sim.New(ec2sim.Config{InstanceType: o.instanceType, InstanceID: o.instanceID, SubnetCIDR: o.subnet,
		LinkNetns: w.node.Path(), LinkPeerNetns: o.peerNetns})
	if err != nil {
		tb.Fatal(err)
	}
	w.sim = sim
	w.nodeIP = sim.State().ENIs[0].PrimaryIP
	w.inNode(func() error {
		if err := w.prepareNode(); err != nil {
			return err
		}
		return sim.Start("127.0.0.1:0") // the socket stays in the node netns
	})
	tb.Cleanup(func() { _ = sim.Close() })
	simtest.PointAt(tb, sim)
	if o.prepare != nil {
		o.env = append(o.env, o.prepare(sim)...)
	}
	w.writeConfig(o.env)
	if !o.fresh {
		w.reconcileUntilSettled(o.env...)
	}
	return w
}

// writeConfig puts the world's targets in its configuration file, which
// every plugin and vpcctl process of the test finds through VPC_CNI_CONFIG,
// as a node's processes all read /etc/vpc-cni/config.
func (w *world) writeConfig(env []string) {
	path := filepath.Join(w.tb.TempDir(), "config")
	if err := os.WriteFile(path, []byte(strings.Join(env, "\n")+"\n"), 0o644); err != nil {
		w.tb.Fatal(err)
	}
	w.tb.Setenv(settings.FileEnv, path)
}

// prepareNode runs inside the node netns: lo up with the primary ENI's
// address (the source of node-to-pod traffic) and forwarding on.
func (w *world) prepareNode() error {
	if err := refuseOriginalNetNS(); err != nil {
		return err
	}
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return err
	}
	if err := netlink.LinkSetUp(lo); err != nil {
		return err
	}
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: w.nodeIP.AsSlice(), Mask: net.CIDRMask(32, 32)}}
	if err := netlink.AddrAdd(lo, addr); err != nil {
		return err
	}
	return os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0o644)
}

// refuseOriginalNetNS guards the set-up: it must never touch the namespace
// the test process started in.
func refuseOriginalNetNS() error {
	cur, err := vnetns.Get()
	if err != nil {
		return err
	}
	defer cur.Close()
	if cur.Equal(origNS) {
		return errors.New("refusing to change the test process's own network namespace")
	}
	return nil
}

// inNode runs fn on a thread inside the node netns; processes started there
// inherit it.
func (w *world) inNode(fn func() error) {
	w.tb.Helper()
	if err := w.node.Do(func(ns.NetNS) error { return fn() }); err != nil {
		w.tb.Fatal(err)
	}
}

// run is one process started from the node netns.
type run struct {
	stdout, stderr []byte
	err            error
	state          *os.ProcessState
}

// execInNode runs path with env (added to the test's environment) and stdin
// from a thread in the node netns, as kubelet's runtime runs a plugin.
func (w *world) execInNode(path string, env []string, stdin []byte, args ...string) run {
	var r run
	err := w.node.Do(func(ns.NetNS) error {
		r = execHere(path, env, stdin, args...)
		return nil
	})
	if err != nil {
		r.err = err
	}
	return r
}

func execHere(path string, env []string, stdin []byte, args ...string) run {
	var out, errb bytes.Buffer
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return run{stdout: out.Bytes(), stderr: errb.Bytes(), err: err, state: cmd.ProcessState}
}

// vpcctl runs the CLI in the node netns against the world's state dir.
func (w *world) vpcctl(env []string, args ...string) run {
	var r run
	err := w.node.Do(func(ns.NetNS) error {
		r = execHere(bin("vpcctl"), env, nil, append([]string{"--state-dir", w.stateDir}, args...)...)
		return nil
	})
	if err != nil {
		r.err = err
	}
	return r
}

// reconcile runs one `vpcctl reconcile` pass with env (the targets) and
// returns how many actions its plan had.
func (w *world) reconcile(env ...string) int {
	w.tb.Helper()
	r := w.vpcctl(env, "reconcile", "--wait", "--timeout", "1m", "-o", "json")
	var rep struct {
		Plan struct {
			Actions []json.RawMessage `json:"actions"`
		} `json:"plan"`
		Failed []string `json:"failed"`
	}
	if err := json.Unmarshal(r.stdout, &rep); err != nil {
		w.tb.Fatalf("vpcctl reconcile: %v, output: %v\n%s%s", r.err, err, r.stdout, r.stderr)
	}
	for _, f := range rep.Failed {
		if w.expectFailed == "" || !strings.Contains(f, w.expectFailed) {
			w.tb.Fatalf("vpcctl reconcile: failed steps %v", rep.Failed)
		}
	}
	if r.err != nil && len(rep.Failed) == 0 { // a pass with an expected failed step exits 1
		w.tb.Fatalf("vpcctl reconcile: %v\n%s%s", r.err, r.stdout, r.stderr)
	}
	return len(rep.Plan.Actions)
}

// reconcileUntilSettled runs passes until one has nothing to do.
func (w *world) reconcileUntilSettled(env ...string) {
	w.tb.Helper()
	for range 6 {
		if w.reconcile(env...) == 0 {
			return
		}
	}
	w.tb.Fatal("reconcile did not settle in 6 passes")
}

// view reads the state file in one read-only transaction.
func (w *world) view(fn func(tx *store.Tx) error) {
	w.tb.Helper()
	st, err := store.Open(w.stateDir, store.Options{ReadOnly: true})
	if err != nil {
		w.tb.Fatal(err)
	}
	if err := st.View(fn); err != nil {
		w.tb.Fatal(err)
	}
}

func (w *world) assignments() []store.Assignment {
	var all []store.Assignment
	w.view(func(tx *store.Tx) (err error) { all, err = tx.Assignments(); return err })
	return all
}

// checkStore fails the test if the store's invariants do not hold.
func (w *world) checkStore() {
	w.tb.Helper()
	w.view(func(tx *store.Tx) error { return tx.Check() })
}
