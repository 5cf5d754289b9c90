package netns

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// PodGateway6 is the IPv6 next hop of every pod interface, as the
// reference's: like PodGateway, a permanent neighbour maps it to the host
// veth's MAC, so the host side needs no address of its own but its link-local.
var PodGateway6 = netip.MustParseAddr("fe80::1")

// setupPodSide6 gives the pod interface link its IPv6 wiring: the address
// ip/128 without duplicate address detection (the pool guarantees it is
// unique, so no tentative wait), the route to PodGateway6 on the link, the
// default route through it and the permanent neighbour to the host's MAC.
// The caller then waits for waitDeliverable, as late as it can, so that the
// kernel's address worker runs while the rest is wired.
func setupPodSide6(h *netlink.Handle, link netlink.Link, netnsPath string, ip netip.Addr, hostMAC net.HardwareAddr) error {
	name := link.Attrs().Name
	if err := addNoDAD(h, link, netnsPath, hostNet(ip)); err != nil {
		return fmt.Errorf("add %s/128 to pod %s: %w", ip, name, err)
	}
	return gatewayRoutes6(h, link, hostMAC)
}

// addrReadyTimeout bounds waitDeliverable; the kernel normally takes
// microseconds (BenchmarkDAD).
const addrReadyTimeout = time.Second

// waitDeliverable waits until the kernel has installed ip's local route in
// the pod. A nodad address is listed, not tentative, at once, but the local
// route that makes packets to it deliverable is inserted by the kernel's
// address worker a moment later; a reply arriving before is dropped (as an
// address error), which would cost a first connection a retransmission.
func waitDeliverable(h *netlink.Handle, ip netip.Addr) error {
	filter := &netlink.Route{Table: unix.RT_TABLE_LOCAL, Dst: hostNet(ip)}
	deadline := time.Now().Add(addrReadyTimeout)
	for {
		routes, err := dump(func() ([]netlink.Route, error) {
			return h.RouteListFiltered(unix.AF_INET6, filter, netlink.RT_FILTER_TABLE|netlink.RT_FILTER_DST)
		})
		if err != nil {
			return fmt.Errorf("list pod local routes: %w", err)
		}
		if len(routes) > 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the kernel did not install %s (local route) within %v", ip, addrReadyTimeout)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// gatewayRoutes6 adds, on link, `fe80::1/128 dev link`, `default via
// fe80::1 dev link` and the neighbour `fe80::1 lladdr mac nud permanent`.
func gatewayRoutes6(h *netlink.Handle, link netlink.Link, mac net.HardwareAddr) error {
	idx, name := link.Attrs().Index, link.Attrs().Name
	gw := ipOf(PodGateway6)
	gwRoute := &netlink.Route{LinkIndex: idx, Dst: hostNet(PodGateway6), Scope: netlink.SCOPE_LINK}
	if err := h.RouteReplace(gwRoute); err != nil {
		return fmt.Errorf("add pod route %s/128 dev %s: %w", PodGateway6, name, err)
	}
	def := &netlink.Route{LinkIndex: idx, Dst: &net.IPNet{IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)}, Gw: gw}
	if err := h.RouteReplace(def); err != nil {
		return fmt.Errorf("add pod route ::/0 via %s dev %s: %w", PodGateway6, name, err)
	}
	neigh := &netlink.Neigh{LinkIndex: idx, Family: unix.AF_INET6, State: netlink.NUD_PERMANENT,
		IP: gw, HardwareAddr: mac}
	if err := h.NeighSet(neigh); err != nil {
		return fmt.Errorf("add pod neighbour %s lladdr %s dev %s: %w", PodGateway6, mac, name, err)
	}
	return nil
}

// addNoDAD adds an IPv6 address flagged nodad: usable at once, never
// tentative. A namespace whose interfaces have IPv6 disabled refuses it
// (EACCES); IPv6 is then enabled on the link and lo, as the reference does,
// and the address added again. Only that case pays for entering the pod's
// namespace.
func addNoDAD(h *netlink.Handle, link netlink.Link, netnsPath string, ipn *net.IPNet) error {
	addr := &netlink.Addr{IPNet: ipn, Flags: unix.IFA_F_NODAD}
	err := h.AddrReplace(link, addr)
	if !errors.Is(err, unix.EACCES) {
		return err
	}
	if err := enableIPv6In(netnsPath, link.Attrs().Name); err != nil {
		return fmt.Errorf("IPv6 is disabled in the pod and could not be enabled: %w", err)
	}
	return h.AddrReplace(link, addr)
}

// enableIPv6In writes disable_ipv6=0 for ifName and lo inside the namespace
// at path. /proc/sys/net shows the calling thread's namespace, so the write
// runs on a thread of its own that enters it and is never unlocked: the
// runtime ends that thread with its goroutine, and the caller's thread never
// changes namespace.
func enableIPv6In(path, ifName string) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		target, err := vnetns.GetFromPath(path)
		if err != nil {
			done <- err
			return
		}
		defer target.Close()
		if err := vnetns.Set(target); err != nil {
			done <- fmt.Errorf("enter %s: %w", path, err)
			return
		}
		var errs []error
		for _, l := range []string{ifName, "lo"} {
			f := filepath.Join("/proc/sys/net/ipv6/conf", l, "disable_ipv6")
			errs = append(errs, os.WriteFile(f, []byte("0"), 0o644))
		}
		done <- errors.Join(errs...)
	}()
	return <-done
}

// hostNeighbour6 adds, on the host veth, `ip lladdr <pod MAC> nud
// permanent`: beyond the reference, so the node reaches a fresh pod at once.
// Otherwise its first solicitation goes unsent while the host veth has no
// usable link-local address yet (created when the pod end comes up), and the
// kernel retries only after a second.
func hostNeighbour6(h *netlink.Handle, veth netlink.Link, ip netip.Addr, podMAC net.HardwareAddr) error {
	n := &netlink.Neigh{LinkIndex: veth.Attrs().Index, Family: unix.AF_INET6, State: netlink.NUD_PERMANENT,
		IP: ipOf(ip), HardwareAddr: podMAC}
	if err := h.NeighSet(n); err != nil {
		return fmt.Errorf("add host neighbour %s lladdr %s dev %s: %w", ip, podMAC, veth.Attrs().Name, err)
	}
	return nil
}
