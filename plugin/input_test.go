package plugin

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	bolt "go.etcd.io/bbolt"

	"vpc-cni/pool"
	"vpc-cni/store"
)

// badInput is one hostile or careless value the runtime may pass, with the
// code and message ADD and CHECK must refuse it with.
type badInput struct {
	name string
	edit func(n *testNode, a *skel.CmdArgs)
	code uint
	msg  string
}

func badInputs() []badInput {
	id := func(s string) func(*testNode, *skel.CmdArgs) {
		return func(_ *testNode, a *skel.CmdArgs) { a.ContainerID = s }
	}
	ifname := func(s string) func(*testNode, *skel.CmdArgs) {
		return func(_ *testNode, a *skel.CmdArgs) { a.IfName = s }
	}
	netnsPath := func(s string) func(*testNode, *skel.CmdArgs) {
		return func(_ *testNode, a *skel.CmdArgs) { a.Netns = s }
	}
	cniArgs := func(s string) func(*testNode, *skel.CmdArgs) {
		return func(_ *testNode, a *skel.CmdArgs) { a.Args = s }
	}
	const env = types.ErrInvalidEnvironmentVariables
	return []badInput{
		{"container ID of 40,000 characters", id(strings.Repeat("a", 40000)), env, "CNI_CONTAINERID is 40000 characters long; at most 256"},
		{"container ID one over the limit", id(strings.Repeat("a", maxContainerIDLen+1)), env, "at most 256"},
		{"empty container ID", id(""), env, "CNI_CONTAINERID is required"},
		{"container ID starting with '-'", id("-abc"), env, "must start with a letter or a digit"},
		{"container ID with '/'", id("abc/def"), env, `holds '/'`},
		{"container ID with a space", id("abc def"), env, `holds ' '`},
		{"container ID with a newline", id("abc\ndef"), env, `holds '\n'`},
		{"empty ifname", ifname(""), env, "CNI_IFNAME is required"},
		{"ifname of 16 bytes", ifname("eth0123456789abc"), env, "16 bytes long; a link name has at most 15"},
		{"ifname '.'", ifname("."), env, "is not a link name"},
		{"ifname '..'", ifname(".."), env, "is not a link name"},
		{"ifname with '/'", ifname("eth/0"), env, `holds '/'`},
		{"ifname with ':'", ifname("eth0:1"), env, `holds ':'`},
		{"ifname with a tab", ifname("eth\t0"), env, `holds '\t'`},
		{"relative netns", netnsPath("netns/pod"), env, `CNI_NETNS "netns/pod" is not an absolute path`},
		{"netns with '..'", netnsPath("/var/run/netns/../../../etc/passwd"), env, `would be "/etc/passwd"`},
		{"netns with '//'", netnsPath("/var/run//netns/pod"), env, "is not a clean path"},
		{"netns of 5,000 bytes", netnsPath("/" + strings.Repeat("a", 5000)), env, "CNI_NETNS is 5001 bytes long"},
		{"the node's own netns", func(n *testNode, a *skel.CmdArgs) { n.host.node = a.Netns }, env, "own network namespace (the node's)"},
		{"a netns that is no network namespace", func(n *testNode, a *skel.CmdArgs) { n.host.notNetns[a.Netns] = true }, env, "is not a network namespace"},
		{"K8S_POD_NAMESPACE of 64", cniArgs("K8S_POD_NAMESPACE=" + strings.Repeat("n", 64)), env, "K8S_POD_NAMESPACE is 64 characters long; at most 63"},
		{"K8S_POD_NAME of 254", cniArgs("K8S_POD_NAME=" + strings.Repeat("p", 254)), env, "K8S_POD_NAME is 254 characters long; at most 253"},
		{"K8S_POD_UID of 40,000", cniArgs("K8S_POD_UID=" + strings.Repeat("u", 40000)), env, "K8S_POD_UID is 40000 characters long"},
	}
}

// ADD and CHECK refuse every bad input with code 4 and a message naming
// the variable, before the store is opened: the state file is byte for byte
// as it was, nothing is wired, nothing is printed.
func TestAddAndCheckRefuseBadInputsUpFront(t *testing.T) {
	for _, verb := range []string{"ADD", "CHECK"} {
		for _, tc := range badInputs() {
			t.Run(verb+"/"+tc.name, func(t *testing.T) {
				n := newTestNode(t).seed(twoENIs, eni(0, "100.64.0.10"))
				args := n.args("c1", n.conf("1.1.0", nil))
				tc.edit(n, args)
				before := n.fileHash()
				out, err := n.run(verb, args)
				wantCode(t, err, tc.code, tc.msg)
				if len(err.Error()) > 300 {
					t.Errorf("the message is %d characters long: the value should be cut", len(err.Error()))
				}
				if out != "" || len(n.host.pods) != 0 || n.fileHash() != before {
					t.Fatalf("refused %s changed state: printed %q, pods %v", verb, out, n.host.pods)
				}
			})
		}
	}
}

// DEL of inputs ADD refuses succeeds and changes nothing: nothing was ever
// set up for them, and a DEL that fails is retried by the runtime forever.
func TestDelOfBadInputsSucceedsAndChangesNothing(t *testing.T) {
	for _, tc := range badInputs() {
		t.Run(tc.name, func(t *testing.T) {
			n := newTestNode(t).seed(twoENIs, eni(0, "100.64.0.10", "100.64.0.11"))
			n.add("c0") // a recorded pod, so that a wrong release would show
			args := n.args("c1", n.conf("1.1.0", nil))
			tc.edit(n, args)
			before := n.fileHash()
			if out, err := n.run("DEL", args); err != nil || out != "" {
				t.Fatalf("DEL: %v, printed %q", err, out)
			}
			if n.fileHash() != before || len(n.host.pods) != 1 {
				t.Fatalf("DEL of bad input changed state: pods %v", n.host.pods)
			}
			for _, p := range n.host.torn {
				if p.NetnsPath != "" {
					t.Fatalf("DEL entered namespace %q", p.NetnsPath)
				}
			}
		})
	}
}

// DEL of a recorded pod whose CNI_NETNS is now the node's own namespace (or
// no namespace at all) still releases the address and removes the node
// side by name, but never treats the node as the pod.
func TestDelWithTheNodesNamespaceReleasesWithoutEnteringIt(t *testing.T) {
	for _, mark := range []func(h *fakeHost, p string){
		func(h *fakeHost, p string) { h.node = p },
		func(h *fakeHost, p string) { h.notNetns[p] = true },
	} {
		n := newTestNode(t).seed(twoENIs, eni(0, "100.64.0.10"))
		ip := n.add("c1")
		mark(n.host, n.netns)
		args := n.args("c1", n.conf("1.1.0", nil))
		if _, err := n.run("DEL", args); err != nil {
			t.Fatalf("DEL: %v", err)
		}
		if len(n.host.torn) != 1 || n.host.torn[0].NetnsPath != "" || n.host.torn[0].IP != ip {
			t.Fatalf("tore down %+v, want the node side of %s only", n.host.torn, ip)
		}
		if _, ok := n.assignment("c1/eth0"); ok || n.state("100.64.0.10") != pool.Cooling {
			t.Fatal("the address was not released")
		}
		if args.NetnsOverride != "1" {
			t.Fatal("skel would still compare CNI_NETNS after DEL and fail it with code 8")
		}
	}
}

// The limits are accepted at the limit, and the longest key fits the store.
func TestInputsAtTheirLimitsAreAccepted(t *testing.T) {
	if k := store.AssignmentKey(strings.Repeat("a", maxContainerIDLen), strings.Repeat("e", maxIfNameLen)); len(k) > bolt.MaxKeySize {
		t.Fatalf("the longest assignment key is %d bytes; bbolt takes %d", len(k), bolt.MaxKeySize)
	}
	n := newTestNode(t).seed(twoENIs, eni(0, "100.64.0.10"))
	id := "0" + strings.Repeat("a._-", (maxContainerIDLen-1)/4) + "bcd"[:(maxContainerIDLen-1)%4]
	args := n.args(id, n.conf("1.1.0", nil))
	args.IfName = "eth0123456789ab"
	args.Args = "K8S_POD_NAMESPACE=" + strings.Repeat("n", maxPodNamespaceLen) + ";K8S_POD_NAME=" + strings.Repeat("p", maxPodNameLen)
	if len(id) != maxContainerIDLen || len(args.IfName) != maxIfNameLen {
		t.Fatalf("test inputs: id %d, ifname %d", len(id), len(args.IfName))
	}
	if _, err := n.run("ADD", args); err != nil {
		t.Fatalf("ADD at the limits: %v", err)
	}
	if _, err := n.run("CHECK", args); err != nil {
		t.Fatalf("CHECK at the limits: %v", err)
	}
	if _, err := n.run("DEL", args); err != nil || n.state("100.64.0.10") != pool.Cooling {
		t.Fatalf("DEL at the limits: %v", err)
	}
}

// fileHash is the state file's content.
func (n *testNode) fileHash() [32]byte {
	n.t.Helper()
	b, err := os.ReadFile(filepath.Join(n.dir, "state.db"))
	if err != nil {
		n.t.Fatal(err)
	}
	return sha256.Sum256(b)
}
