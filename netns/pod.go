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
//
// IP6, when valid, is the pod's IPv6 address on the same interface (a /128
// through the gateway PodGateway6): with IP unset the pod is IPv6 only, with
// both it is dual-stack. Table is IP's (TableFor): the /80 IP6 comes from is
// the primary ENI's, so IP6 always uses main. Egress, when set,
// adds the second interface through which the pod reaches the other family
// (see Egress). Sandbox, when complete, is written on the host veth (its
// alias) and makes teardown take only this sandbox's veths (see Sandbox).
type Pod struct {
	NetnsPath string
	IfName    string
	HostVeth  string
	MTU       int
	IP        netip.Addr
	Table     int
	IP6       netip.Addr
	Egress    *Egress
	Sandbox   Sandbox
}

// TableFor is the route table of ip's replies: Table for the pod's IPv4,
// main for its IPv6 (the primary ENI's /80; ENI tables hold IPv4 routes
// only, so a from-rule to one would send IPv6 replies nowhere useful).
func (p Pod) TableFor(ip netip.Addr) int {
	if ip.Unmap().Is6() {
		return MainTable
	}
	return p.Table
}

// Wired describes the veth pair SetupPod made, for the CNI result; Egress
// the egress pair (v4if0 or v6if0), when the pod has one.
type Wired struct {
	HostVeth   string
	HostMAC    string
	PodIf      string
	PodMAC     string
	PodIfIndex int
	Egress     *Wired
}

func wired(p Pod, hostVeth, podLink netlink.Link) *Wired {
	return &Wired{
		HostVeth:   p.HostVeth,
		HostMAC:    hostVeth.Attrs().HardwareAddr.String(),
		PodIf:      p.IfName,
		PodMAC:     podLink.Attrs().HardwareAddr.String(),
		PodIfIndex: podLink.Attrs().Index,
	}
}

func (p Pod) validate() error {
	switch {
	case !p.IP.IsValid() && !p.IP6.IsValid():
		return errors.New("pod has neither an IPv4 nor an IPv6 address")
	case p.IP.IsValid() && !p.IP.Is4():
		return fmt.Errorf("pod IP %v is not IPv4", p.IP)
	case p.IP6.IsValid() && (!p.IP6.Is6() || p.IP6.Is4In6() || p.IP6.Zone() != ""):
		return fmt.Errorf("pod IPv6 %v is not a plain IPv6 address", p.IP6)
	case p.HostVeth == "" || len(p.HostVeth) > 15:
		return fmt.Errorf("host veth name %q must be 1-15 characters", p.HostVeth)
	case p.IfName == "" || len(p.IfName) > 15:
		return fmt.Errorf("pod interface name %q must be 1-15 characters", p.IfName)
	case p.NetnsPath == "":
		return errors.New("pod netns path is empty")
	case p.Table < 0 || p.Table == unix.RT_TABLE_LOCAL || p.Table == unix.RT_TABLE_DEFAULT:
		return fmt.Errorf("route table %d is not usable for a pod", p.Table)
	}
	return p.Egress.validate(p)
}

// addrs are the pod's addresses on IfName, IPv4 first.
func (p Pod) addrs() []netip.Addr {
	var out []netip.Addr
	for _, a := range []netip.Addr{p.IP, p.IP6} {
		if a.IsValid() {
			out = append(out, a)
		}
	}
	return out
}

// String names the pod by its addresses, for errors.
func (p Pod) String() string {
	switch {
	case p.IP.IsValid() && p.IP6.IsValid():
		return p.IP.String() + "+" + p.IP6.String()
	case p.IP.IsValid():
		return p.IP.String()
	}
	return p.IP6.String()
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
	if p.Egress != nil {
		e := p.Egress.normal(p)
		p.Egress = &e
	}
	err = withHost(func(host *netlink.Handle) error {
		for _, ip := range p.addrs() {
			if err := inUse(host, ip, p.HostVeth); err != nil {
				return err
			}
		}
		return withPod(p.NetnsPath, func(pod *netlink.Handle, podNS vnetns.NsHandle) error {
			w, err = setupPod(host, pod, podNS, p)
			return err
		})
	})
	if errors.Is(err, ErrAddressInUse) {
		return Wired{}, fmt.Errorf("wire pod %s on %s: %w", p, p.HostVeth, err) // nothing made: nothing to undo
	}
	if err != nil {
		_ = TeardownPod(p)
		return Wired{}, fmt.Errorf("wire pod %s on %s: %w", p, p.HostVeth, err)
	}
	return w, nil
}

func setupPod(host, pod *netlink.Handle, podNS vnetns.NsHandle, p Pod) (Wired, error) {
	hostVeth, podLink, err := makeVethPair(host, pod, podNS, p)
	if err != nil {
		return Wired{}, err
	}
	hostMAC := hostVeth.Attrs().HardwareAddr
	if err := pod.LinkSetUp(podLink); err != nil {
		return Wired{}, fmt.Errorf("set pod %s up: %w", p.IfName, err)
	}
	if p.IP6.IsValid() {
		if err := setupPodSide6(pod, podLink, p.NetnsPath, p.IP6, hostMAC); err != nil {
			return Wired{}, err
		}
	}
	if p.IP.IsValid() {
		if err := setupPodSide(pod, podLink, p, hostMAC); err != nil {
			return Wired{}, err
		}
	}
	for _, ip := range p.addrs() {
		if err := setupHostSide(host, hostVeth, p.HostVeth, ip, p.TableFor(ip)); err != nil {
			return Wired{}, err
		}
	}
	if p.IP6.IsValid() {
		if err := hostNeighbour6(host, hostVeth, p.IP6, podLink.Attrs().HardwareAddr); err != nil {
			return Wired{}, err
		}
	}
	w := wired(p, hostVeth, podLink)
	if p.Egress != nil {
		if w.Egress, err = setupEgress(host, pod, podNS, p); err != nil {
			return Wired{}, err
		}
	}
	if p.IP6.IsValid() {
		if err := waitDeliverable(pod, p.IP6); err != nil {
			return Wired{}, err
		}
	}
	return *w, nil
}

// makeVethPair creates the pair from the node side, the peer straight in the
// pod netns; when either name is taken (an ADD repeated), the older pair is
// removed and the new one made. The host end is up when it returns; its IPv6
// sysctls are set before that, as the reference.
func makeVethPair(host, pod *netlink.Handle, podNS vnetns.NsHandle, p Pod) (netlink.Link, netlink.Link, error) {
	veth := newVeth(p, podNS)
	err := host.LinkAdd(veth)
	if errors.Is(err, unix.EEXIST) {
		if err := deleteVeth(host, p.HostVeth); err != nil {
			return nil, nil, err
		}
		if err := deleteVeth(pod, p.IfName); err != nil {
			return nil, nil, fmt.Errorf("in pod netns: %w", err)
		}
		veth = newVeth(p, podNS)
		err = host.LinkAdd(veth)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("create veth %s (pod end %s): %w", p.HostVeth, p.IfName, err)
	}
	// LinkAdd has already looked the new link up for its index, and the MAC
	// is ours: the host end needs no second lookup.
	if veth.Index == 0 {
		return nil, nil, fmt.Errorf("find new host veth %s: no index after create", p.HostVeth)
	}
	if alias := p.Sandbox.alias(); alias != "" {
		// Before any route goes through it: a routed veth always says whose it is.
		if err := host.LinkSetAlias(veth, alias); err != nil {
			return nil, nil, fmt.Errorf("name %s's sandbox on it: %w", p.HostVeth, err)
		}
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

// newVeth is the pair p asks for, with a fresh MAC on the host end and one
// queue each way on both ends. Asked for nothing, the kernel makes a queue
// per possible CPU and then cuts each end back to one queue in use, waiting
// for an expedited RCU grace period per end (0.1 ms each, on every ADD,
// under the RTNL lock); the pair it ends up with is the same.
func newVeth(p Pod, podNS vnetns.NsHandle) *netlink.Veth {
	return &netlink.Veth{
		LinkAttrs: netlink.LinkAttrs{Name: p.HostVeth, MTU: p.MTU, HardwareAddr: randomMAC(), TxQLen: -1,
			NumTxQueues: 1, NumRxQueues: 1}, // the peer gets the same (netlink copies them)
		PeerName:      p.IfName,
		PeerNamespace: netlink.NsFd(int(podNS)),
		PeerMTU:       uint32(p.MTU),
		PeerTxQLen:    -1,
	}
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

// setupPodSide: address /32, the gateway's link route, the default
// route through it and the permanent neighbour to the host veth's MAC.
func setupPodSide(h *netlink.Handle, link netlink.Link, p Pod, hostMAC net.HardwareAddr) error {
	idx := link.Attrs().Index
	gw := ipOf(PodGateway)
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

// setupHostSide: the host route to the pod's address ip (/32 or /128) and
// its policy rules, in ip's family.
func setupHostSide(h *netlink.Handle, veth netlink.Link, vethName string, ip netip.Addr, table int) error {
	route := &netlink.Route{LinkIndex: veth.Attrs().Index, Dst: hostNet(ip),
		Scope: netlink.SCOPE_LINK, Table: MainTable}
	if err := h.RouteReplace(route); err != nil {
		return fmt.Errorf("add host route %s dev %s: %w", hostNet(ip), vethName, err)
	}
	rules, err := listRulesOf(h, familyOf(ip))
	if err != nil {
		return err
	}
	if err := ensureRule(h, rules, toPodRule(ip)); err != nil {
		return err
	}
	if isMain(table) {
		// The address moved to the primary ENI: a from-rule left from an
		// earlier life on a secondary ENI would misroute its replies.
		return deleteRules(h, rules, fromPodRule(ip, 0))
	}
	return ensureRule(h, rules, fromPodRule(ip, table))
}
