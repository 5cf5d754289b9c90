//go:build cluster

package main

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"vpc-cni/sim/ec2sim"
)

// The simulated VPC 100.64.0.0/16: each node's subnet has its own router
// namespace (vpc<N>, holding the other end of every ENI link of the node),
// the routers are linked, and the control plane sits on a subnet of vpc1.
var (
	ctlIP   = netip.MustParseAddr("100.64.250.10") // the API server, etcd
	ctlGW   = netip.MustParseAddr("100.64.250.1")
	transit = [2]netip.Addr{netip.MustParseAddr("100.64.251.1"), netip.MustParseAddr("100.64.251.2")}
)

const simListen = "127.0.0.1:8940" // each node's EC2/IMDS, in its own netns

type nodeNet struct {
	name     string
	subnet   netip.Prefix
	gateway  netip.Addr
	sim      *ec2sim.Sim
	router   *holder // vpc<N>
	primary  netip.Addr
	instance string
}

func handleIn(path string) (*netlink.Handle, error) {
	h, err := vnetns.GetFromPath(path)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	return netlink.NewHandleAt(h)
}

func sysctls(path string, kv map[string]string) error {
	return inNS(path, func() error {
		for k, v := range kv {
			if err := os.WriteFile("/proc/sys/"+strings.ReplaceAll(k, ".", "/"), []byte(v), 0o644); err != nil {
				return err
			}
		}
		return nil
	})
}

func inNS(path string, fn func() error) error {
	n, err := ns.GetNS(path)
	if err != nil {
		return err
	}
	defer n.Close()
	return n.Do(func(ns.NetNS) error { return fn() })
}

// veth links a (name there, addr/bits) to b (peer name, peerAddr/bits), both up.
func veth(aPath, name string, addr netip.Addr, bPath, peer string, peerAddr netip.Addr, bits int) error {
	ha, err := handleIn(aPath)
	if err != nil {
		return err
	}
	defer ha.Close()
	hb, err := handleIn(bPath)
	if err != nil {
		return err
	}
	defer hb.Close()
	bns, err := vnetns.GetFromPath(bPath)
	if err != nil {
		return err
	}
	defer bns.Close()
	v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name}, PeerName: peer, PeerNamespace: netlink.NsFd(int(bns))}
	if err := ha.LinkAdd(v); err != nil {
		return fmt.Errorf("veth %s-%s: %w", name, peer, err)
	}
	for _, s := range []struct {
		h    *netlink.Handle
		name string
		a    netip.Addr
	}{{ha, name, addr}, {hb, peer, peerAddr}} {
		l, err := s.h.LinkByName(s.name)
		if err != nil {
			return err
		}
		if err := s.h.AddrAdd(l, &netlink.Addr{IPNet: prefix(s.a, bits)}); err != nil {
			return err
		}
		if err := s.h.LinkSetUp(l); err != nil {
			return err
		}
	}
	return nil
}

func prefix(a netip.Addr, bits int) *net.IPNet {
	return &net.IPNet{IP: a.AsSlice(), Mask: net.CIDRMask(bits, 32)}
}

func routeVia(path string, dst netip.Prefix, gw netip.Addr) error {
	h, err := handleIn(path)
	if err != nil {
		return err
	}
	defer h.Close()
	r := &netlink.Route{Gw: gw.AsSlice()}
	if dst.IsValid() {
		r.Dst = prefix(dst.Addr(), dst.Bits())
	}
	return h.RouteAdd(r)
}

var routerSysctls = map[string]string{"net.ipv4.ip_forward": "1", "net.ipv4.conf.all.rp_filter": "0",
	"net.ipv4.conf.default.rp_filter": "0"}

// nodeSetup: lo up, eth0 (the primary ENI) with its address and the default
// route through the subnet's router, forwarding on, the emulator serving on
// 127.0.0.1 in the node's netns.
func (n *nodeNet) setup(nodeNS string) error {
	if err := n.sim.PlugPrimary(); err != nil {
		return err
	}
	h, err := handleIn(nodeNS)
	if err != nil {
		return err
	}
	defer h.Close()
	for _, name := range []string{"lo", "eth0"} {
		l, err := h.LinkByName(name)
		if err != nil {
			return err
		}
		if name == "eth0" {
			if err := h.AddrAdd(l, &netlink.Addr{IPNet: prefix(n.primary, n.subnet.Bits())}); err != nil {
				return err
			}
		}
		if err := h.LinkSetUp(l); err != nil {
			return err
		}
	}
	if err := h.RouteAdd(&netlink.Route{Gw: n.gateway.AsSlice()}); err != nil {
		return err
	}
	if err := sysctls(nodeNS, map[string]string{"net.ipv4.ip_forward": "1"}); err != nil {
		return err
	}
	return inNS(nodeNS, func() error { return n.sim.Start(simListen) })
}

// syncRouter makes vpc<N> route every address of the node's ENIs to the
// ENI's link, with a permanent neighbour (the VPC knows where an address
// lives; it does not ARP), and answer for the gateway on every link.
func (n *nodeNet) syncRouter() error {
	h, err := handleIn(n.router.netns())
	if err != nil {
		return err
	}
	defer h.Close()
	for _, e := range n.sim.State().ENIs {
		if e.DeviceIndex < 0 {
			continue
		}
		l, err := h.LinkByName(fmt.Sprintf("sim-eth%d", e.DeviceIndex))
		if err != nil {
			continue // attached a moment ago: next round
		}
		if err := h.AddrReplace(l, &netlink.Addr{IPNet: prefix(n.gateway, 32)}); err != nil {
			return err
		}
		mac, err := net.ParseMAC(e.MAC)
		if err != nil {
			return err
		}
		for _, a := range append([]netip.Addr{e.PrimaryIP}, e.Secondary...) {
			if err := h.RouteReplace(&netlink.Route{LinkIndex: l.Attrs().Index, Dst: prefix(a, 32)}); err != nil {
				return err
			}
			nb := &netlink.Neigh{LinkIndex: l.Attrs().Index, IP: a.AsSlice(), HardwareAddr: mac,
				State: netlink.NUD_PERMANENT, Family: unix.AF_INET}
			if err := h.NeighSet(nb); err != nil {
				return err
			}
		}
	}
	return nil
}

// proxy listens on 127.0.0.1 in the machine's namespace (a socket, no
// interface or route) and forwards each connection to dst, dialled from
// inside nsPath: kubectl on the machine reaches the API server.
func proxy(nsPath string, dst netip.AddrPort) (string, io.Closer, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var up net.Conn
				err := inNS(nsPath, func() (err error) {
					up, err = net.DialTimeout("tcp", dst.String(), 5*time.Second)
					return err
				})
				if err != nil {
					return
				}
				defer up.Close()
				go func() { _, _ = io.Copy(up, c); _ = up.(*net.TCPConn).CloseWrite() }()
				_, _ = io.Copy(c, up)
			}()
		}
	}()
	return l.Addr().String(), l, nil
}

func writeFile(path, body string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(body), 0o644)
}

// loUp brings up lo in a fresh namespace (etcd and the API server listen on 127.0.0.1).
func loUp(path string) error {
	h, err := handleIn(path)
	if err != nil {
		return err
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err != nil {
		return err
	}
	return h.LinkSetUp(lo)
}
