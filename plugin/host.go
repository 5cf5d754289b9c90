package plugin

import (
	"net/netip"

	"vpc-cni/netns"
)

// Host is the kernel work the verbs do on the node: the whole pod wiring as
// the interface plugin, only the policy rules as an IPAM delegate. Kernel does
// it with netns; the verbs' unit tests use a fake, so that their decisions
// (which address, when to give it back, which CNI code) run without root.
//
// The verbs call every method with the store closed (the address is taken,
// or the assignment read, in a transaction before) and without the reconcile
// lock, so a slow netlink call never holds up another process. An error is
// the kernel's, worded for the CNI error the verb returns.
type Host interface {
	// CheckNetns says whether path may be used as a pod's network namespace:
	// nil, or an error matching netns.ErrNodeNetns, netns.ErrNotNetns or
	// fs.ErrNotExist. It only looks; the verbs call it before anything else.
	CheckNetns(path string) error
	// SetupPod wires the pod (ADD as the interface plugin): the veth pair,
	// the pod's address, routes and neighbour in its namespace, the host
	// route and the policy rules. Idempotent as the reference is: a host veth
	// of the same name is made afresh, routes and rules are replaced, never
	// duplicated. On an error it removes what it made, and ADD gives the
	// address back.
	SetupPod(p netns.Pod) (netns.Wired, error)
	// TeardownPod removes what SetupPod made (GC): the pod interface if
	// its namespace still exists, the host veth, the host route and the
	// rules. Idempotent: a piece, or the namespace, already gone is done. On
	// an error the address is kept, so a later GC finds it.
	TeardownPod(p netns.Pod) error
	// DetachPod removes what routes to the pod and what would keep its
	// address from another pod (DEL): the host routes, the host neighbours
	// and the rules. The veth pairs are left to the runtime's deletion of
	// the namespace (netns.DetachPod says why that is safe). A Pod with no
	// address (no assignment, no prevResult) is detached from what the kernel
	// routes through its veths into p.NetnsPath. Idempotent; on an error the
	// address is kept, so a retried DEL finds it.
	DetachPod(p netns.Pod) error
	// CheckPod verifies every piece SetupPod makes (CHECK) and returns a
	// *netns.WiringError for the first one missing or wrong; another error
	// means it could not look. It changes nothing.
	CheckPod(p netns.Pod) error
	// SetPodRules installs the policy rules of an address another plugin
	// wires (ADD as an IPAM delegate): to ip lookup main, and from ip lookup
	// table for a secondary ENI's address (table 0 or 254: main). Idempotent;
	// on an error ADD gives the address back.
	SetPodRules(ip netip.Addr, table int) error
	// ClearPodRules removes both rules of ip (DEL, GC as a delegate).
	// Idempotent: missing rules are fine.
	ClearPodRules(ip netip.Addr) error
	// CheckPodRules verifies the rules SetPodRules installs (CHECK as a
	// delegate); the error names the missing rule. It changes nothing.
	CheckPodRules(ip netip.Addr, table int) error
	// ListHost reads the node's pod wiring (netns.ListHost): pod veths,
	// which of them lead into a live namespace, their routes and rules. It
	// changes nothing. STATUS and ADD ask only when the store holds no
	// pool, to tell a lost state file (running pods' wiring) from a new node.
	ListHost(vethPrefix string) (netns.HostState, error)
}

// Kernel is the node's network namespace, through netns.
type Kernel struct{}

var _ Host = Kernel{}

func (Kernel) CheckNetns(path string) error                    { return netns.CheckPodNetns(path) }
func (Kernel) SetupPod(p netns.Pod) (netns.Wired, error)       { return netns.SetupPod(p) }
func (Kernel) TeardownPod(p netns.Pod) error                   { return netns.TeardownPod(p) }
func (Kernel) DetachPod(p netns.Pod) error                     { return netns.DetachPod(p) }
func (Kernel) CheckPod(p netns.Pod) error                      { return netns.CheckPod(p) }
func (Kernel) SetPodRules(ip netip.Addr, table int) error      { return netns.SetPodRules(ip, table) }
func (Kernel) ClearPodRules(ip netip.Addr) error               { return netns.ClearPodRules(ip) }
func (Kernel) CheckPodRules(ip netip.Addr, table int) error    { return netns.CheckPodRules(ip, table) }
func (Kernel) ListHost(prefix string) (netns.HostState, error) { return netns.ListHostWith(prefix) }
