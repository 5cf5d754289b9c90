package netns

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// ErrLinkNotReady: no link has the ENI's MAC yet. After an attach, IMDS and
// the kernel lag behind EC2; callers retry later rather than fail.
var ErrLinkNotReady = errors.New("no link with this MAC yet")

// ENIHost is the node side of one secondary ENI.
type ENIHost struct {
	MAC        string
	MTU        int          // 0 keeps the link's MTU
	PrimaryIP  netip.Addr   // the ENI's primary private IPv4
	SubnetCIDR netip.Prefix // the ENI's subnet; the gateway is its base + 1
	Table      int          // device index + 1
}

func (e ENIHost) validate() error {
	switch {
	case !e.PrimaryIP.Is4() || !e.SubnetCIDR.Addr().Is4():
		return fmt.Errorf("ENI %s: primary IP %v and subnet %v must be IPv4", e.MAC, e.PrimaryIP, e.SubnetCIDR)
	case !e.SubnetCIDR.Contains(e.PrimaryIP):
		return fmt.Errorf("ENI %s: primary IP %v is outside subnet %v", e.MAC, e.PrimaryIP, e.SubnetCIDR)
	case e.Table <= 0 || e.Table == MainTable || e.Table == unix.RT_TABLE_LOCAL || e.Table == unix.RT_TABLE_DEFAULT:
		return fmt.Errorf("ENI %s: route table %d is reserved", e.MAC, e.Table)
	}
	return nil
}

// gateway is the VPC router's address in the subnet: its base + 1.
func (e ENIHost) gateway() netip.Addr { return e.SubnetCIDR.Masked().Addr().Next() }

// linkByMAC finds the node link with this MAC, or returns ErrLinkNotReady.
func linkByMAC(h *netlink.Handle, mac string) (netlink.Link, error) {
	want, err := net.ParseMAC(mac)
	if err != nil {
		return nil, fmt.Errorf("ENI MAC %q: %w", mac, err)
	}
	links, err := dump(h.LinkList)
	if err != nil {
		return nil, fmt.Errorf("list links: %w", err)
	}
	for _, l := range links {
		// A vlan or ipvlan stacked on the ENI shares its MAC.
		stacked := l.Type() == "vlan" || l.Type() == "ipvlan"
		if bytes.Equal(l.Attrs().HardwareAddr, want) && !stacked {
			return l, nil
		}
	}
	return nil, fmt.Errorf("ENI %s: %w", mac, ErrLinkNotReady)
}

// SetupENI prepares the node side of a secondary ENI, as the reference's
// setupENINetwork does: MTU, up, the primary IP as its only global
// IPv4 address, table Table with the subnet gateway and a default route, no
// subnet route in main, and rule `from PrimaryIP lookup Table` prio 32765.
// Idempotent.
func SetupENI(e ENIHost) error {
	if err := e.validate(); err != nil {
		return err
	}
	e.PrimaryIP = e.PrimaryIP.Unmap()
	return withHost(func(h *netlink.Handle) error {
		link, err := linkByMAC(h, e.MAC)
		if err != nil {
			return err
		}
		name := link.Attrs().Name
		steps := []struct {
			what string
			do   func(*netlink.Handle, netlink.Link, ENIHost) error
		}{
			{"bring up", eniLinkUp},
			{"address", eniAddress},
			{"route table", eniTable},
			{"main-table subnet route", eniDropSubnetRoute},
			{"rule", eniRule},
		}
		for _, s := range steps {
			if err := s.do(h, link, e); err != nil {
				return fmt.Errorf("ENI %s (%s) %s: %w", e.MAC, name, s.what, err)
			}
		}
		return nil
	})
}

func eniLinkUp(h *netlink.Handle, link netlink.Link, e ENIHost) error {
	if e.MTU > 0 && link.Attrs().MTU != e.MTU {
		if err := h.LinkSetMTU(link, e.MTU); err != nil {
			return fmt.Errorf("set MTU %d: %w", e.MTU, err)
		}
	}
	return h.LinkSetUp(link)
}

// eniAddress leaves PrimaryIP/<subnet bits> the link's only global IPv4
// address. It is (re)added after the strays go because deleting a subnet's
// first address takes the later ones with it (promote_secondaries off). A new
// address gets no prefix route: the subnet is reached through the ENI's own
// table, never through main.
func eniAddress(h *netlink.Handle, link netlink.Link, e ENIHost) error {
	want := &net.IPNet{IP: ipOf(e.PrimaryIP), Mask: net.CIDRMask(e.SubnetCIDR.Bits(), 32)}
	present, err := removeStrayAddrs(h, link, want)
	if err != nil || present {
		return err
	}
	return h.AddrAdd(link, &netlink.Addr{IPNet: want, Flags: unix.IFA_F_NOPREFIXROUTE})
}

// removeStrayAddrs deletes global IPv4 addresses other than want and reports
// whether want is still there afterwards.
func removeStrayAddrs(h *netlink.Handle, link netlink.Link, want *net.IPNet) (present bool, err error) {
	list := func() ([]netlink.Addr, error) { return h.AddrList(link, unix.AF_INET) }
	addrs, err := dump(list)
	if err != nil {
		return false, err
	}
	for _, a := range addrs {
		if a.Scope != unix.RT_SCOPE_UNIVERSE || a.IPNet.String() == want.String() {
			continue
		}
		if err := h.AddrDel(link, &a); err != nil && !isGone(err) {
			return false, fmt.Errorf("remove stray address %s: %w", a.IPNet, err)
		}
	}
	if addrs, err = dump(list); err != nil {
		return false, err
	}
	for _, a := range addrs {
		present = present || a.IPNet.String() == want.String()
	}
	return present, nil
}

func eniTable(h *netlink.Handle, link netlink.Link, e ENIHost) error {
	idx := link.Attrs().Index
	gw := e.gateway()
	routes := []*netlink.Route{
		{LinkIndex: idx, Dst: host32(gw), Scope: netlink.SCOPE_LINK, Table: e.Table},
		{LinkIndex: idx, Gw: ipOf(gw), Table: e.Table},
	}
	for _, r := range routes {
		if err := h.RouteReplace(r); err != nil {
			return fmt.Errorf("route %s via %v: %w", r.Dst, r.Gw, err)
		}
	}
	return nil
}

// eniDropSubnetRoute removes the prefix route the kernel (or a DHCP client)
// put in main for the link: traffic to the subnet from the node must leave by
// the primary ENI.
func eniDropSubnetRoute(h *netlink.Handle, link netlink.Link, e ENIHost) error {
	filter := &netlink.Route{LinkIndex: link.Attrs().Index, Table: MainTable}
	routes, err := dump(func() ([]netlink.Route, error) {
		return h.RouteListFiltered(unix.AF_INET, filter, netlink.RT_FILTER_OIF|netlink.RT_FILTER_TABLE)
	})
	if err != nil {
		return err
	}
	subnet := e.SubnetCIDR.Masked().String()
	for _, r := range routes {
		if r.Dst == nil || r.Dst.String() != subnet {
			continue
		}
		if err := h.RouteDel(&r); err != nil && !isGone(err) {
			return err
		}
	}
	return nil
}

func eniRule(h *netlink.Handle, _ netlink.Link, e ENIHost) error {
	rules, err := listRules(h)
	if err != nil {
		return err
	}
	return ensureRule(h, rules, ruleSpec{PrioFromENI, false, e.PrimaryIP, e.Table})
}

// TeardownENI removes, before the ENI is freed, the rules whose source is its
// primary IP and its routes in table Table. Idempotent; a link already gone
// took its routes with it.
func TeardownENI(e ENIHost) error {
	e.PrimaryIP = e.PrimaryIP.Unmap()
	return withHost(func(h *netlink.Handle) error {
		if err := deleteRulesFrom(h, e.PrimaryIP); err != nil {
			return fmt.Errorf("ENI %s: %w", e.MAC, err)
		}
		link, err := linkByMAC(h, e.MAC)
		if errors.Is(err, ErrLinkNotReady) {
			return nil
		}
		if err != nil {
			return err
		}
		return deleteTableRoutes(h, link, e.Table)
	})
}

// deleteRulesFrom removes every rule whose source is exactly ip/32.
func deleteRulesFrom(h *netlink.Handle, ip netip.Addr) error {
	rules, err := listRules(h)
	if err != nil {
		return err
	}
	for _, r := range rules {
		if !is32(r.Src, ip) {
			continue
		}
		if err := h.RuleDel(&r); err != nil && !isGone(err) {
			return fmt.Errorf("delete %s: %w", describeRule(r), err)
		}
	}
	return nil
}

func deleteTableRoutes(h *netlink.Handle, link netlink.Link, table int) error {
	filter := &netlink.Route{LinkIndex: link.Attrs().Index, Table: table}
	routes, err := dump(func() ([]netlink.Route, error) {
		return h.RouteListFiltered(unix.AF_INET, filter, netlink.RT_FILTER_OIF|netlink.RT_FILTER_TABLE)
	})
	if err != nil {
		return fmt.Errorf("list table %d: %w", table, err)
	}
	for _, r := range routes {
		if err := h.RouteDel(&r); err != nil && !isGone(err) {
			return fmt.Errorf("delete table %d route %v: %w", table, r.Dst, err)
		}
	}
	return nil
}
