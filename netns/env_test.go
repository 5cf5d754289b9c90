package netns

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"

	"vpc-cni/internal/testsupport/testenv"
)

// Everything kernel-facing here happens in namespaces the test makes: a
// "node" netns standing in for the host and one netns per pod.

// inNS runs fn with the calling thread inside n and fails the test on error.
func inNS(tb testing.TB, n ns.NetNS, fn func() error) {
	tb.Helper()
	if err := n.Do(func(ns.NetNS) error { return fn() }); err != nil {
		tb.Fatal(err)
	}
}

// nodePrimaryIP is the simulated primary ENI's address in the node netns:
// the source of node-to-pod traffic.
var nodePrimaryIP = netip.MustParseAddr("100.64.0.10")

// newNode makes a node netns: lo up, a primary "ENI" (one end of a veth pair
// whose other end sits in a VPC netns) holding nodePrimaryIP/24, and IPv4
// forwarding on so pods can reach each other through it.
func newNode(tb testing.TB) ns.NetNS {
	tb.Helper()
	node, vpc := testenv.NewNetNS(tb), testenv.NewNetNS(tb)
	inNS(tb, node, func() error {
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
		eth0, err := addENILink("eth0", nil, vpc)
		if err != nil {
			return err
		}
		addr := &netlink.Addr{IPNet: &net.IPNet{IP: ipOf(nodePrimaryIP), Mask: net.CIDRMask(24, 32)}}
		if err := netlink.AddrAdd(eth0, addr); err != nil {
			return err
		}
		return os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0o644)
	})
	return node
}

// addENILink creates, in the calling thread's netns, a stand-in for an ENI:
// a veth end (the kernel here has no dummy driver) whose peer lives in vpc.
// A nil mac lets the kernel choose.
func addENILink(name string, mac net.HardwareAddr, vpc ns.NetNS) (netlink.Link, error) {
	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: name, HardwareAddr: mac, TxQLen: -1},
		PeerName:      "vpc-" + name,
		PeerNamespace: netlink.NsFd(int(vpc.Fd())),
	}
	if err := netlink.LinkAdd(veth); err != nil {
		return nil, fmt.Errorf("create ENI stand-in %s: %w", name, err)
	}
	if err := setUpIn(vpc, "vpc-"+name); err != nil {
		return nil, err
	}
	l, err := netlink.LinkByName(name)
	if err != nil {
		return nil, err
	}
	return l, netlink.LinkSetUp(l)
}

// setUpIn sets the link called name in netns n up.
func setUpIn(n ns.NetNS, name string) error {
	h, err := netlink.NewHandleAt(vnetns.NsHandle(n.Fd()))
	if err != nil {
		return err
	}
	defer h.Close()
	l, err := h.LinkByName(name)
	if err != nil {
		return err
	}
	return h.LinkSetUp(l)
}

// refuseOriginalNetNS guards the sysctl writes and link changes of the test
// set-up: they must never reach the namespace the test process started in.
// origNetNS is the namespace the test process started in, taken while
// package variables initialise (before any thread switched). /proc/self/ns/net
// would not do: it is the main thread's, and ns.Do may run on the main thread.
var origNetNS, origNetNSErr = vnetns.Get()

func refuseOriginalNetNS() error {
	if origNetNSErr != nil {
		return origNetNSErr
	}
	cur, err := vnetns.Get()
	if err != nil {
		return err
	}
	defer cur.Close()
	if cur.Equal(origNetNS) {
		return errors.New("refusing to change the test process's own network namespace")
	}
	return nil
}

// newPod makes a pod netns and the Pod that wires it into the node.
func newPod(tb testing.TB, name, ip string, table int) (ns.NetNS, Pod) {
	tb.Helper()
	n := testenv.NewNetNS(tb)
	return n, Pod{
		NetnsPath: n.Path(),
		IfName:    "eth0",
		HostVeth:  HostVethName("test", name),
		MTU:       9001,
		IP:        netip.MustParseAddr(ip),
		Table:     table,
	}
}

// ping sends one ICMP echo from inside n to dst and waits for the reply.
func ping(n ns.NetNS, dst netip.Addr) error {
	return n.Do(func(ns.NetNS) error { return pingHere(dst) })
}

func pingHere(dst netip.Addr) error {
	_, err := Ping(dst, 3*time.Second)
	return err
}

func vnetnsOf(n ns.NetNS) vnetns.NsHandle { return vnetns.NsHandle(n.Fd()) }
