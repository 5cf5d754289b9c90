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

// Pod is one pod interface to wire: the pod's netns path, the interface name
// inside it (CNI_IFNAME), the host veth name (HostVethName), the MTU of both
// ends (0 keeps the kernel's default), the pod's IPv4 address and the route
// table of the ENI that holds it (0 or 254: main, the primary ENI; else the
// secondary ENI's device index + 1).
type Pod struct {
	NetnsPath string
	IfName    string
	HostVeth  string
	MTU       int
	IP        netip.Addr
	Table     int
}

// Wired describes the veth pair SetupPod made, for the CNI result.
type Wired struct {
	HostVeth   string
	HostMAC    string
	PodIf      string
	PodMAC     string
	PodIfIndex int
}

func (p Pod) validate() error {
	switch {
	case !p.IP.Is4():
		return fmt.Errorf("pod IP %v is not IPv4", p.IP)
	case p.HostVeth == "" || len(p.HostVeth) > 15:
		return fmt.Errorf("host veth name %q must be 1-15 characters", p.HostVeth)
	case p.IfName == "" || len(p.IfName) > 15:
		return fmt.Errorf("pod interface name %q must be 1-15 characters", p.IfName)
	case p.NetnsPath == "":
		return errors.New("pod netns path is empty")
	case p.Table < 0 || p.Table == unix.RT_TABLE_LOCAL || p.Table == unix.RT_TABLE_DEFAULT:
		return fmt.Errorf("route table %d is not usable for a pod", p.Table)
	}
	return nil
}

// SetupPod wires p in the routed-ENI layout (see the package doc). It is
// idempotent the way the reference is: a host veth already named p.HostVeth
// is deleted with its pod end and the pair made afresh, and routes,
// neighbour and rules are replaced, not duplicated.
// On failure it removes what it made.
func SetupPod(p Pod) (w Wired, err error) {
	if err := p.validate(); err != nil {
		return Wired{}, err
	}
	p.IP = p.IP.Unmap()
	err = withHost(func(host *netlink.Handle) error {
		return withPod(p.NetnsPath, func(pod *netlink.Handle, podNS vnetns.NsHandle) error {
			w, err = setupPod(host, pod, podNS, p)
			return err
		})
	})
	if err != nil {
		_ = TeardownPod(p)
		return Wired{}, fmt.Errorf("wire pod %s on %s: %w", p.IP, p.HostVeth, err)
	}
	return w, nil
}

func setupPod(host, pod *netlink.Handle, podNS vnetns.NsHandle, p Pod) (Wired, error) {
	hostVeth, podLink, err := makeVethPair(host, pod, podNS, p)
	if err != nil {
		return Wired{}, err
	}
	hostMAC := hostVeth.Attrs().HardwareAddr
	if err := setupPodSide(pod, podLink, p, hostMAC); err != nil {
		return Wired{}, err
	}
	if err := setupHostSide(host, hostVeth, p); err != nil {
		return Wired{}, err
	}
	return Wired{
		HostVeth:   p.HostVeth,
		HostMAC:    hostMAC.String(),
		PodIf:      p.IfName,
		PodMAC:     podLink.Attrs().HardwareAddr.String(),
		PodIfIndex: podLink.Attrs().Index,
	}, nil
}

// makeVethPair creates the pair from the node side, the peer straight in the
// pod netns, after removing an older pair of either name. The host end is up
// when it returns; its IPv6 sysctls are set before that, as the reference.
func makeVethPair(host, pod *netlink.Handle, podNS vnetns.NsHandle, p Pod) (netlink.Link, netlink.Link, error) {
	if err := deleteVeth(host, p.HostVeth); err != nil {
		return nil, nil, err
	}
	if err := deleteVeth(pod, p.IfName); err != nil {
		return nil, nil, fmt.Errorf("in pod netns: %w", err)
	}
	mac, err := randomMAC()
	if err != nil {
		return nil, nil, fmt.Errorf("generate host veth MAC: %w", err)
	}
	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: p.HostVeth, MTU: p.MTU, HardwareAddr: mac, TxQLen: -1},
		PeerName:      p.IfName,
		PeerNamespace: netlink.NsFd(int(podNS)),
		PeerMTU:       uint32(p.MTU),
		PeerTxQLen:    -1,
	}
	if err := host.LinkAdd(veth); err != nil {
		return nil, nil, fmt.Errorf("create veth %s (pod end %s): %w", p.HostVeth, p.IfName, err)
	}
	// LinkAdd has already looked the new link up for its index, and the MAC
	// is ours: the host end needs no second lookup.
	if veth.Index == 0 {
		return nil, nil, fmt.Errorf("find new host veth %s: no index after create", p.HostVeth)
	}
	setHostVethSysctls(p.HostVeth)
	if err := host.LinkSetUp(veth); err != nil {
		return nil, nil, fmt.Errorf("set %s up: %w", p.HostVeth, err)
	}
	podLink, err := pod.LinkByName(p.IfName)
	if err != nil {
		return nil, nil, fmt.Errorf("find new pod interface %s: %w", p.IfName, err)
	}
	return veth, podLink, nil
}

// deleteVeth removes the veth called name, if any; another kind of link of
// that name is not ours to remove.
func deleteVeth(h *netlink.Handle, name string) error {
	l, err := linkByName(h, name)
	if err != nil || l == nil {
		return err
	}
	if l.Type() != "veth" {
		return fmt.Errorf("link %s exists and is a %s, not a veth", name, l.Type())
	}
	if err := h.LinkDel(l); err != nil && !isGone(err) {
		return fmt.Errorf("delete old veth %s: %w", name, err)
	}
	return nil
}

// setupPodSide: link up, address /32, the gateway's link route, the default
// route through it and the permanent neighbour to the host veth's MAC.
func setupPodSide(h *netlink.Handle, link netlink.Link, p Pod, hostMAC net.HardwareAddr) error {
	idx := link.Attrs().Index
	gw := ipOf(PodGateway)
	if err := h.LinkSetUp(link); err != nil {
		return fmt.Errorf("set pod %s up: %w", p.IfName, err)
	}
	if err := h.AddrReplace(link, &netlink.Addr{IPNet: host32(p.IP)}); err != nil {
		return fmt.Errorf("add %s/32 to pod %s: %w", p.IP, p.IfName, err)
	}
	gwRoute := &netlink.Route{LinkIndex: idx, Dst: host32(PodGateway), Scope: netlink.SCOPE_LINK}
	if err := h.RouteReplace(gwRoute); err != nil {
		return fmt.Errorf("add pod route %s/32 dev %s: %w", PodGateway, p.IfName, err)
	}
	if err := h.RouteReplace(&netlink.Route{LinkIndex: idx, Gw: gw}); err != nil {
		return fmt.Errorf("add pod default route via %s: %w", PodGateway, err)
	}
	neigh := &netlink.Neigh{LinkIndex: idx, Family: unix.AF_INET, State: netlink.NUD_PERMANENT,
		IP: gw, HardwareAddr: hostMAC}
	if err := h.NeighSet(neigh); err != nil {
		return fmt.Errorf("add pod neighbour %s lladdr %s: %w", PodGateway, hostMAC, err)
	}
	return nil
}

// setupHostSide: the /32 route to the pod and its policy rules.
func setupHostSide(h *netlink.Handle, veth netlink.Link, p Pod) error {
	route := &netlink.Route{LinkIndex: veth.Attrs().Index, Dst: host32(p.IP),
		Scope: netlink.SCOPE_LINK, Table: MainTable}
	if err := h.RouteReplace(route); err != nil {
		return fmt.Errorf("add host route %s/32 dev %s: %w", p.IP, p.HostVeth, err)
	}
	rules, err := listRules(h)
	if err != nil {
		return err
	}
	if err := ensureRule(h, rules, toPodRule(p.IP)); err != nil {
		return err
	}
	if isMain(p.Table) {
		// The address moved to the primary ENI: a from-rule left from an
		// earlier life on a secondary ENI would misroute its replies.
		return deleteRules(h, rules, fromPodRule(p.IP, 0))
	}
	return ensureRule(h, rules, fromPodRule(p.IP, p.Table))
}
