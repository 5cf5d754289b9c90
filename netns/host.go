package netns

import (
	"cmp"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// HostState is what pod wiring left on the node, for `vpcctl gc` to compare
// with the assignments it knows.
type HostState struct {
	Veths  []string    // links named eni* that are veths
	Rules  []RuleInfo  // prio 512 and 1536 rules with a /32 (IPv4) or /128 (IPv6) selector
	Routes []RouteInfo // main-table /32 and /128 routes through eni* veths
	// Live are the Veths whose other end is in another network namespace.
	// The kernel deletes both ends of a veth when either namespace goes, so
	// that namespace is alive: a running pod's, whatever the store says.
	Live []string
	// Orphans are the Live veths without a host route whose namespace no
	// path names (orphans): DELeted pods' pairs nothing will use again.
	Orphans []string
	// Sandboxes are whose the Veths are, as their aliases say (those with
	// one): what a hold of a running pod's address names it by.
	Sandboxes map[string]Sandbox
}

// RuleInfo is one pod rule: IP is the destination of a 512 rule and the
// source of a 1536 rule.
type RuleInfo struct {
	Priority int
	IP       netip.Addr
	Table    int
}

// RouteInfo is one host route to a pod.
type RouteInfo struct {
	IP   netip.Addr
	Veth string
}

// ListHost reads the node netns's pod veths, rules and routes, sorted.
func ListHost() (HostState, error) { return ListHostWith(VethPrefix) }

// ListHostWith is ListHost for veths named with prefix
// (AWS_VPC_K8S_CNI_VETHPREFIX).
func ListHostWith(prefix string) (st HostState, err error) {
	err = withHost(func(h *netlink.Handle) error {
		veths, err := listPodVeths(h, prefix)
		if err != nil {
			return err
		}
		for _, l := range veths {
			st.Veths = append(st.Veths, l.Attrs().Name)
			if s, ok := SandboxOf(l.Attrs().Alias); ok {
				if st.Sandboxes == nil {
					st.Sandboxes = map[string]Sandbox{}
				}
				st.Sandboxes[l.Attrs().Name] = s
			}
			if l.Attrs().NetNsID >= 0 { // -1: no IFLA_LINK_NETNSID, the peer is here
				st.Live = append(st.Live, l.Attrs().Name)
			}
		}
		if st.Rules, err = listPodRules(h); err != nil {
			return err
		}
		if st.Routes, err = listPodRoutes(h, veths); err != nil {
			return err
		}
		st.Orphans = orphans(h, veths, st.Routes)
		return nil
	})
	return st, err
}

func listPodVeths(h *netlink.Handle, prefix string) ([]netlink.Link, error) {
	if prefix == "" {
		prefix = VethPrefix
	}
	links, err := dump(h.LinkList)
	if err != nil {
		return nil, fmt.Errorf("list links: %w", err)
	}
	var veths []netlink.Link
	for _, l := range links {
		if l.Type() == "veth" && strings.HasPrefix(l.Attrs().Name, prefix) {
			veths = append(veths, l)
		}
	}
	slices.SortFunc(veths, func(a, b netlink.Link) int { return cmp.Compare(a.Attrs().Name, b.Attrs().Name) })
	return veths, nil
}

func listPodRules(h *netlink.Handle) ([]RuleInfo, error) {
	rules, err := listRulesOf(h, unix.AF_INET)
	if err != nil {
		return nil, err
	}
	rules6, err := listRulesOf(h, unix.AF_INET6)
	if err != nil {
		return nil, err
	}
	rules = append(rules, rules6...)
	var out []RuleInfo
	for _, r := range rules {
		sel := r.Src
		switch {
		case r.Priority == PrioToPod && r.Src == nil:
			sel = r.Dst
		case r.Priority == PrioFromPod && r.Dst == nil:
		default:
			continue
		}
		if ip, ok := addrOfHost(sel); ok {
			out = append(out, RuleInfo{Priority: r.Priority, IP: ip, Table: r.Table})
		}
	}
	slices.SortFunc(out, func(a, b RuleInfo) int {
		return cmp.Or(cmp.Compare(a.Priority, b.Priority), a.IP.Compare(b.IP), cmp.Compare(a.Table, b.Table))
	})
	return out, nil
}

func listPodRoutes(h *netlink.Handle, veths []netlink.Link) ([]RouteInfo, error) {
	names := map[int]string{}
	for _, l := range veths {
		names[l.Attrs().Index] = l.Attrs().Name
	}
	var routes []netlink.Route
	for _, family := range []int{unix.AF_INET, unix.AF_INET6} {
		rs, err := dump(func() ([]netlink.Route, error) { return h.RouteList(nil, family) })
		if err != nil {
			return nil, fmt.Errorf("list routes: %w", err)
		}
		routes = append(routes, rs...)
	}
	var out []RouteInfo
	for _, r := range routes {
		ip, ok := addrOfHost(r.Dst)
		if veth, ours := names[r.LinkIndex]; ok && ours {
			out = append(out, RouteInfo{IP: ip, Veth: veth})
		}
	}
	slices.SortFunc(out, func(a, b RouteInfo) int {
		return cmp.Or(a.IP.Compare(b.IP), cmp.Compare(a.Veth, b.Veth))
	})
	return out, nil
}

// addrOfHost returns the address of a /32 or /128 selector, or false.
func addrOfHost(n *net.IPNet) (netip.Addr, bool) {
	if ip, ok := addrOf32(n); ok || n == nil {
		return ip, ok
	}
	got, ok := netip.AddrFromSlice(n.IP)
	if !ok || !got.Is6() || got.Is4In6() {
		return netip.Addr{}, false
	}
	return got, isHost(n, got)
}

// NetnsExists reports whether path is a network namespace (a bind mount
// under /var/run/netns or a /proc/<pid>/ns/net of a live process).
func NetnsExists(path string) bool {
	return path != "" && ns.IsNSorErr(path) == nil
}

// LivePods are the host routes through veths whose namespace is alive: the
// node's running pods as the kernel shows them, whatever the store holds.
func (hs HostState) LivePods() []RouteInfo {
	var out []RouteInfo
	for _, r := range hs.Routes {
		if slices.Contains(hs.Live, r.Veth) {
			out = append(out, r)
		}
	}
	return out
}

// RunningPods counts the running pods' veths (a dual-stack pod has a route
// of each family).
func (hs HostState) RunningPods() int {
	veths := map[string]bool{}
	for _, r := range hs.LivePods() {
		veths[r.Veth] = true
	}
	return len(veths)
}
