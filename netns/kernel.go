package netns

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Rule priorities and the main table: the reference uses the same numbers, and
// operators' tools and the reference's own clean-up look for them.
const (
	PrioToPod   = 512   // to <pod IP> lookup main
	PrioFromPod = 1536  // from <pod IP> lookup <ENI table>
	PrioFromENI = 32765 // from <ENI primary IP> lookup <ENI table>
	MainTable   = unix.RT_TABLE_MAIN
)

// RouteTable is the route table of the ENI at deviceIndex: 0 (main) for the
// primary ENI, device index + 1 for a secondary one, as the reference numbers them.
func RouteTable(deviceIndex int) int {
	if deviceIndex <= 0 {
		return 0
	}
	return deviceIndex + 1
}

// PodGateway is the link-local next hop every pod routes through; a permanent
// neighbour entry maps it to the host veth's MAC, so the host side needs no
// address and no proxy ARP.
var PodGateway = netip.MustParseAddr("169.254.1.1")

// dumpRetries bounds retries of a netlink dump that the kernel interrupted
// because the table changed under it (other pods being wired concurrently).
const dumpRetries = 5

// hostHandle opens a netlink socket in the calling thread's namespace.
func hostHandle() (*netlink.Handle, error) {
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("open netlink in node netns: %w", err)
	}
	return h, nil
}

// withHost runs fn with a netlink handle in the calling thread's namespace.
func withHost(fn func(h *netlink.Handle) error) error {
	h, err := hostHandle()
	if err != nil {
		return err
	}
	defer h.Close()
	return fn(h)
}

// withPod runs fn with a netlink handle inside the namespace at path, and
// that namespace's file descriptor (to create a veth peer there).
func withPod(path string, fn func(h *netlink.Handle, nsFd vnetns.NsHandle) error) error {
	nsFd, err := vnetns.GetFromPath(path)
	if err != nil {
		return fmt.Errorf("open pod netns %s: %w", path, err)
	}
	defer nsFd.Close()
	h, err := netlink.NewHandleAt(nsFd, unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("open netlink in pod netns %s: %w", path, err)
	}
	defer h.Close()
	return fn(h, nsFd)
}

// dump retries a netlink listing the kernel interrupted.
func dump[T any](list func() ([]T, error)) ([]T, error) {
	var err error
	for range dumpRetries {
		var out []T
		out, err = list()
		if !errors.Is(err, netlink.ErrDumpInterrupted) {
			return out, err
		}
	}
	return nil, err
}

// isGone reports an error that means "already absent", which teardown treats
// as success.
func isGone(err error) bool {
	var nf netlink.LinkNotFoundError
	return errors.As(err, &nf) || errors.Is(err, unix.ENOENT) ||
		errors.Is(err, unix.ESRCH) || errors.Is(err, unix.ENODEV) ||
		errors.Is(err, unix.EADDRNOTAVAIL) // an address deleted with its subnet's first
}

// linkByName returns the link or nil when absent.
func linkByName(h *netlink.Handle, name string) (netlink.Link, error) {
	l, err := h.LinkByName(name)
	if isGone(err) {
		return nil, nil
	}
	return l, err
}

func ipOf(a netip.Addr) net.IP { return net.IP(a.AsSlice()) }

func host32(a netip.Addr) *net.IPNet {
	return &net.IPNet{IP: ipOf(a), Mask: net.CIDRMask(32, 32)}
}

// hostNet is a as a host prefix of its family: a/32 or a/128.
func hostNet(a netip.Addr) *net.IPNet {
	return &net.IPNet{IP: ipOf(a), Mask: net.CIDRMask(a.BitLen(), a.BitLen())}
}

// prefixNet is p as a net.IPNet.
func prefixNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: ipOf(p.Addr()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// familyOf is the netlink family of a.
func familyOf(a netip.Addr) int {
	if a.Is4() {
		return unix.AF_INET
	}
	return unix.AF_INET6
}

// is32 reports whether n is exactly a/32.
func is32(n *net.IPNet, a netip.Addr) bool { return a.Is4() && isHost(n, a) }

// isHost reports whether n is exactly a as a host prefix (/32 or /128).
func isHost(n *net.IPNet, a netip.Addr) bool {
	if n == nil {
		return false
	}
	ones, bits := n.Mask.Size()
	got, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return false
	}
	if a.Is4() {
		got = got.Unmap()
	}
	return ones == a.BitLen() && bits == a.BitLen() && got == a
}

// addrOf32 returns the address of a /32 selector, or false.
func addrOf32(n *net.IPNet) (netip.Addr, bool) {
	if n == nil {
		return netip.Addr{}, false
	}
	got, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Addr{}, false
	}
	got = got.Unmap()
	return got, is32(n, got)
}

func isMain(table int) bool { return table == 0 || table == MainTable }
