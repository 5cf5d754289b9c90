package plugin

import (
	"net/netip"

	"vpc-cni/netns"
)

// Host is the kernel work the verbs do on the node: the whole pod wiring as
// the interface plugin, only the policy rules as an IPAM delegate. Kernel does
// it with netns; the verbs' unit tests use a fake, so that their decisions
// (which address, when to give it back, which CNI code) run without root.
type Host interface {
	// CheckNetns says whether path may be used as a pod's network namespace:
	// nil, or an error matching netns.ErrNodeNetns, netns.ErrNotNetns or
	// fs.ErrNotExist. It only looks; the verbs call it before anything else.
	CheckNetns(path string) error
	SetupPod(p netns.Pod) (netns.Wired, error)
	TeardownPod(p netns.Pod) error
	CheckPod(p netns.Pod) error
	SetPodRules(ip netip.Addr, table int) error
	ClearPodRules(ip netip.Addr) error
	CheckPodRules(ip netip.Addr, table int) error
}

// Kernel is the node's network namespace, through netns.
type Kernel struct{}

var _ Host = Kernel{}

func (Kernel) CheckNetns(path string) error                 { return netns.CheckPodNetns(path) }
func (Kernel) SetupPod(p netns.Pod) (netns.Wired, error)    { return netns.SetupPod(p) }
func (Kernel) TeardownPod(p netns.Pod) error                { return netns.TeardownPod(p) }
func (Kernel) CheckPod(p netns.Pod) error                   { return netns.CheckPod(p) }
func (Kernel) SetPodRules(ip netip.Addr, table int) error   { return netns.SetPodRules(ip, table) }
func (Kernel) ClearPodRules(ip netip.Addr) error            { return netns.ClearPodRules(ip) }
func (Kernel) CheckPodRules(ip netip.Addr, table int) error { return netns.CheckPodRules(ip, table) }
