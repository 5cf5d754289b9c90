package plugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/containernetworking/cni/pkg/skel"

	"vpc-cni/netns"
	"vpc-cni/pool"
	"vpc-cni/store"
)

// fakeHost stands for the node's kernel: it remembers the pods it wired and
// the rules it set, by address, and fails the operations named in fail.
type fakeHost struct {
	pods  map[netip.Addr]netns.Pod
	rules map[netip.Addr]int
	torn  []netns.Pod // every TeardownPod and DetachPod, in order
	fail  map[string]error
	// node is the path of the plugin's own namespace; notNetns are paths
	// that exist but are no network namespace. Any other existing path
	// stands for a pod's namespace.
	node     string
	notNetns map[string]bool
	wiring   netns.HostState // what ListHost shows
	// duringSetup runs inside SetupPod: what happens to the node while a
	// pod is being wired (confirm_test.go).
	duringSetup func()
}

func (h *fakeHost) ListHost(string) (netns.HostState, error) { return h.wiring, h.fail["ListHost"] }

var _ Host = (*fakeHost)(nil)

func newFakeHost() *fakeHost {
	return &fakeHost{pods: map[netip.Addr]netns.Pod{}, rules: map[netip.Addr]int{}, fail: map[string]error{},
		notNetns: map[string]bool{}}
}

// CheckNetns answers as netns.CheckPodNetns does, from the paths it was told.
func (h *fakeHost) CheckNetns(path string) error {
	if _, err := os.Stat(path); err != nil {
		return err
	}
	if path == h.node {
		return fmt.Errorf("%s %w", path, netns.ErrNodeNetns)
	}
	if h.notNetns[path] {
		return fmt.Errorf("%s %w (it is a regular file)", path, netns.ErrNotNetns)
	}
	return nil
}

func (h *fakeHost) SetupPod(p netns.Pod) (netns.Wired, error) {
	if err := h.fail["SetupPod"]; err != nil {
		return netns.Wired{}, err
	}
	if h.duringSetup != nil {
		h.duringSetup()
	}
	h.pods[p.IP] = p
	return netns.Wired{HostVeth: p.HostVeth, HostMAC: "0a:58:00:00:00:01", PodIf: p.IfName, PodMAC: "0a:58:00:00:00:02", PodIfIndex: 3}, nil
}

func (h *fakeHost) TeardownPod(p netns.Pod) error {
	if err := h.fail["TeardownPod"]; err != nil {
		return err
	}
	h.torn = append(h.torn, p)
	delete(h.pods, p.IP)
	return nil
}

func (h *fakeHost) DetachPod(p netns.Pod) error {
	if err := h.fail["DetachPod"]; err != nil {
		return err
	}
	h.torn = append(h.torn, p)
	delete(h.pods, p.IP)
	return nil
}

func (h *fakeHost) CheckPod(p netns.Pod) error {
	if err := h.fail["CheckPod"]; err != nil {
		return err
	}
	got, ok := h.pods[p.IP]
	if !ok {
		return fmt.Errorf("no host route to %s", p.IP)
	}
	if got != p {
		return fmt.Errorf("wired as %+v, want %+v", got, p)
	}
	return nil
}

func (h *fakeHost) SetPodRules(ip netip.Addr, table int) error {
	if err := h.fail["SetPodRules"]; err != nil {
		return err
	}
	h.rules[ip] = table
	return nil
}

func (h *fakeHost) ClearPodRules(ip netip.Addr) error {
	if err := h.fail["ClearPodRules"]; err != nil {
		return err
	}
	delete(h.rules, ip)
	return nil
}

func (h *fakeHost) CheckPodRules(ip netip.Addr, table int) error {
	if got, ok := h.rules[ip]; !ok || got != table {
		return fmt.Errorf("no rule from %s to table %d", ip, table)
	}
	return nil
}

var subnet = netip.MustParsePrefix("100.64.0.0/16")

// testNode is a node for the verbs: a real store in a temporary directory,
// a fake kernel and a file standing for the pod's network namespace.
type testNode struct {
	t     *testing.T
	dir   string
	st    *store.Store
	host  *fakeHost
	netns string
}

func newTestNode(t *testing.T) *testNode {
	t.Helper()
	dir := t.TempDir()
	st, err := store.OpenNew(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ns := filepath.Join(dir, "netns-pod")
	if err := os.WriteFile(ns, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return &testNode{t: t, dir: dir, st: st, host: newFakeHost(), netns: ns}
}

// seed records the node (limits as given) and its ENIs.
func (n *testNode) seed(limits pool.Limits, enis ...pool.ENI) *testNode {
	n.t.Helper()
	n.update(func(tx *store.Tx) error {
		// Confirmed in this boot, as a pass leaves it: the plugin trusts it without IMDS.
		node := store.Node{InstanceID: "i-0123", InstanceType: "t3.medium", SubnetCIDR: subnet, Limits: limits}
		if err := tx.PutNode(withNodeField(n.t, node, "confirmedBoot", thisBoot(n.t))); err != nil {
			return err
		}
		for _, e := range enis {
			if err := tx.PutENI(e); err != nil {
				return err
			}
		}
		return nil
	})
	return n
}

func (n *testNode) update(fn func(*store.Tx) error) {
	n.t.Helper()
	if err := n.st.Update(fn); err != nil {
		n.t.Fatal(err)
	}
}

// eni is a ready ENI with one free /32 per address.
func eni(dev int, ips ...string) pool.ENI {
	e := pool.ENI{ID: fmt.Sprintf("eni-%d", dev), DeviceIndex: dev, MAC: fmt.Sprintf("0a:00:00:00:00:%02x", dev),
		PrimaryIP: netip.AddrFrom4([4]byte{100, 64, 200, byte(dev)}), SubnetID: "subnet-1", SubnetCIDR: subnet, Ready: true}
	for _, s := range ips {
		ip := netip.MustParseAddr(s)
		e.Blocks = append(e.Blocks, pool.Block{CIDR: netip.PrefixFrom(ip, 32), Addrs: []pool.Addr{{IP: ip, State: pool.Free}}})
	}
	return e
}

// conf is the network configuration with vpc-cni as the interface plugin;
// extra keys are merged in at the top level.
func (n *testNode) conf(version string, extra map[string]any) []byte {
	c := map[string]any{"cniVersion": version, "name": "vpc", "type": Name}
	for k, v := range n.options() {
		c[k] = v
	}
	for k, v := range extra {
		c[k] = v
	}
	return mustJSON(n.t, c)
}

// ipamConf is vpc-cni as the IPAM delegate of ptp.
func (n *testNode) ipamConf(version string, extra map[string]any) []byte {
	c := map[string]any{"cniVersion": version, "name": "vpc", "type": "ptp", "ipam": n.options()}
	for k, v := range extra {
		c[k] = v
	}
	return mustJSON(n.t, c)
}

// options keep the plugin off EC2 and off background work unless a test
// turns them on.
func (n *testNode) options() map[string]any {
	return map[string]any{"type": Name, "stateDir": n.dir, "logFile": filepath.Join(n.dir, "plugin.log"),
		"logLevel": "debug", "inlineGrow": false, "backgroundReconcile": false}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// args are the runtime's arguments for container id's eth0 in pod default/<id>.
func (n *testNode) args(id string, conf []byte) *skel.CmdArgs {
	return &skel.CmdArgs{ContainerID: id, Netns: n.netns, IfName: "eth0", StdinData: conf,
		Args: "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=" + id + ";K8S_POD_UID=uid-" + id}
}

// run calls the verb as skel would and returns what it printed.
func (n *testNode) run(verb string, args *skel.CmdArgs) (string, error) {
	var out bytes.Buffer
	f := funcsOn(n.host, &out)
	fn := map[string]func(*skel.CmdArgs) error{"ADD": f.Add, "DEL": f.Del, "CHECK": f.Check, "GC": f.GC, "STATUS": f.Status}[verb]
	err := fn(args)
	return out.String(), err
}

// add runs a 1.1.0 ADD of id and returns the address it printed.
func (n *testNode) add(id string) netip.Addr {
	n.t.Helper()
	out, err := n.run("ADD", n.args(id, n.conf("1.1.0", nil)))
	if err != nil {
		n.t.Fatalf("ADD %s: %v", id, err)
	}
	return resultIP(n.t, out)
}

func resultIP(t *testing.T, out string) netip.Addr {
	t.Helper()
	var r struct {
		IPs []struct{ Address string } `json:"ips"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.IPs) != 1 {
		t.Fatalf("result %q: %v", out, err)
	}
	p, err := netip.ParsePrefix(r.IPs[0].Address)
	if err != nil {
		t.Fatal(err)
	}
	return p.Addr()
}

// assignment reads key's assignment from the store.
func (n *testNode) assignment(key string) (store.Assignment, bool) {
	n.t.Helper()
	var a store.Assignment
	var ok bool
	err := n.st.View(func(tx *store.Tx) (err error) { a, ok, err = tx.Assignment(key); return err })
	if err != nil {
		n.t.Fatal(err)
	}
	return a, ok
}

// state is the pool state of ip.
func (n *testNode) state(ip string) pool.State {
	n.t.Helper()
	var snap pool.Snapshot
	err := n.st.View(func(tx *store.Tx) (err error) { snap, err = tx.Snapshot(); return err })
	if err != nil {
		n.t.Fatal(err)
	}
	for _, e := range snap.ENIs {
		for _, b := range e.Blocks {
			for _, a := range b.Addrs {
				if a.IP.String() == ip {
					return a.State
				}
			}
		}
	}
	n.t.Fatalf("%s is not in the pool", ip)
	return ""
}

func (n *testNode) counter(name string) int64 {
	n.t.Helper()
	var c map[string]int64
	if err := n.st.View(func(tx *store.Tx) (err error) { c, err = tx.Counters(); return err }); err != nil {
		n.t.Fatal(err)
	}
	return c[name]
}

// wantCode fails unless err is a CNI error with code whose message contains msg.
func wantCode(t *testing.T, err error, code uint, msg string) {
	t.Helper()
	if codeOf(err) != code || !bytes.Contains([]byte(err.Error()), []byte(msg)) {
		t.Fatalf("error %v (code %d), want code %d mentioning %q", err, codeOf(err), code, msg)
	}
}

var errKernel = errors.New("netlink: operation not permitted")

func ipOf(s string) netip.Addr { return netip.MustParseAddr(s) }

func (n *testNode) now() time.Time { return time.Now() }
