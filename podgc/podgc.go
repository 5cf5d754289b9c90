// Package podgc finds what pods left behind: assignments whose network
// namespace is gone (a DEL that never came) and host-side wiring (veths,
// routes, rules) that no assignment owns and that leads to no live
// namespace. `vpcctl gc` and reconcile run it. Wiring into a live namespace
// is a running pod's even when the store has no assignment for it (a lost
// state file): it is kept and reported, for `vpcctl state rebuild`.
package podgc

import (
	"fmt"
	"net/netip"
	"time"

	"vpc-cni/netns"
	"vpc-cni/store"
)

// Host is the node side podgc reads and cleans; Kernel is netns's. Run calls
// it with the store closed and takes no lock: each release is its own short
// transaction that checks the assignment is still the one it read, so a
// concurrent ADD or DEL is never undone.
type Host interface {
	// ListHost reads the node namespace's pod veths, routes and rules,
	// sorted. It changes nothing; an error stops Run before any removal.
	ListHost() (netns.HostState, error)
	// NetnsExists reports whether path is a network namespace (a bind mount
	// under /var/run/netns or a live process's /proc/<pid>/ns/net). False
	// releases the assignment; Kernel answers false for a path that is gone,
	// is not a namespace, or cannot be read.
	NetnsExists(path string) bool
	// TeardownPod removes a dead pod's wiring as the plugin's DEL does.
	// Idempotent: pieces already gone are done. On an error the assignment
	// is kept and the next run tries again.
	TeardownPod(p netns.Pod) error
	// RemoveLeftover removes the host veth named veth (when not empty) and
	// the routes and rules of ip (when valid), leaving the rules of an address
	// now routed through another link (handed to another pod). Idempotent;
	// an error is reported and the run goes on.
	RemoveLeftover(veth string, ip netip.Addr) error
}

// Kernel is the real node netns; its pod veths start with VethPrefix
// (AWS_VPC_K8S_CNI_VETHPREFIX; "" is the default "eni").
type Kernel struct{ VethPrefix string }

func (k Kernel) ListHost() (netns.HostState, error)            { return netns.ListHostWith(k.VethPrefix) }
func (Kernel) NetnsExists(path string) bool                    { return netns.NetnsExists(path) }
func (Kernel) TeardownPod(p netns.Pod) error                   { return netns.TeardownPod(p) }
func (Kernel) RemoveLeftover(veth string, ip netip.Addr) error { return netns.RemoveLeftover(veth, ip) }

// Report lists what was (or, dry-run, would be) removed.
type Report struct {
	Released  []string `json:"released"`  // assignment keys whose netns is gone
	Leftovers []string `json:"leftovers"` // host veths, routes and rules no assignment owns
	// Unowned: running pods' wiring (a veth into a live namespace, its route
	// and rules) that no assignment owns; kept, never removed.
	Unowned []string `json:"unowned,omitempty"`
	Failed  []string `json:"failed,omitempty"`
}

// Run collects garbage. The host is read before the assignments: an ADD
// takes its address before it creates its veth, so every veth seen belongs
// to an assignment that the later read sees.
func Run(st *store.Store, host Host, dryRun bool, now time.Time) (Report, error) {
	rep := Report{Released: []string{}, Leftovers: []string{}}
	hs, err := host.ListHost()
	if err != nil {
		return rep, fmt.Errorf("reading the host's pod wiring: %w", err)
	}
	var all []store.Assignment
	if err := st.View(func(tx *store.Tx) (err error) { all, err = tx.Assignments(); return err }); err != nil {
		return rep, err
	}
	live := releaseGone(st, host, all, dryRun, now, &rep)
	removeUnowned(host, hs, live, dryRun, &rep)
	return rep, nil
}

// releaseGone releases assignments whose netns is gone and returns the rest.
func releaseGone(st *store.Store, host Host, all []store.Assignment, dryRun bool, now time.Time, rep *Report) []store.Assignment {
	var live []store.Assignment
	for _, a := range all {
		if a.Netns == "" || host.NetnsExists(a.Netns) {
			live = append(live, a)
			continue
		}
		rep.Released = append(rep.Released, fmt.Sprintf("%s (%s, %s/%s)", a.Key, a.IP, a.PodNamespace, a.PodName))
		if dryRun {
			continue
		}
		if err := release(st, host, a, now); err != nil {
			rep.Failed = append(rep.Failed, fmt.Sprintf("%s: %v", a.Key, err))
		}
	}
	return live
}

func release(st *store.Store, host Host, a store.Assignment, now time.Time) error {
	if err := host.TeardownPod(PodOf(a)); err != nil {
		return err
	}
	return st.Update(func(tx *store.Tx) error {
		cur, ok, err := tx.Assignment(a.Key)
		if err != nil || !ok || cur.IP != a.IP || cur.IPv6 != a.IPv6 {
			return err // gone or replaced meanwhile: nothing of ours to release
		}
		_, _, err = tx.Give(a.Key, now)
		return err
	})
}

// PodOf is the wiring an assignment recorded: what to tear down for it.
func PodOf(a store.Assignment) netns.Pod {
	p := netns.Pod{NetnsPath: a.Netns, IfName: a.IfName, HostVeth: a.HostVeth, IP: a.IP, IP6: a.IPv6,
		Table: netns.RouteTable(a.DeviceIndex), Sandbox: SandboxOf(a)}
	if a.EgressIP.IsValid() {
		p.Egress = &netns.Egress{IP: a.EgressIP}
	}
	return p
}

// SandboxOf is the runtime attachment an assignment is for, as its host
// veth's alias names it.
func SandboxOf(a store.Assignment) netns.Sandbox {
	return netns.Sandbox{Network: a.Network, ContainerID: a.ContainerID, IfName: a.IfName}
}

// LivePods are the host routes through veths whose namespace is alive
// (netns.HostState.LivePods).
func LivePods(hs netns.HostState) []netns.RouteInfo { return hs.LivePods() }

// owned is what removeUnowned leaves: the live assignments' veths and
// addresses, and running pods' wiring into live namespaces (listed as
// Unowned when no assignment owns it); orphans are DELeted pods' pairs
// into a namespace no path names.
func owned(hs netns.HostState, live []store.Assignment, rep *Report) (veths map[string]bool, ips map[netip.Addr]bool, orphans map[string]bool) {
	veths, ips = map[string]bool{}, map[netip.Addr]bool{}
	for _, a := range live {
		veths[a.HostVeth], ips[a.IP], ips[a.IPv6] = true, true, true
	}
	orphans, routed := map[string]bool{}, map[string]bool{}
	for _, v := range hs.Orphans {
		orphans[v] = true
	}
	for _, r := range hs.Routes {
		routed[r.Veth] = true
	}
	for _, v := range hs.Live {
		if veths[v] || orphans[v] {
			continue
		}
		veths[v] = true
		// One without a route is a DELeted pod's pair, left to its
		// namespace's deletion (netns.DetachPod): the runtime's to remove.
		if routed[v] {
			rep.Unowned = append(rep.Unowned, "veth "+v+" into a live namespace")
		}
	}
	for _, r := range LivePods(hs) {
		ips[r.IP] = true // its route and rules are the running pod's
	}
	return veths, ips, orphans
}

// removeUnowned removes veths, routes and rules that no live assignment owns
// and that lead to no live namespace, or to one no path names (an orphan);
// the rest it lists as Unowned.
func removeUnowned(host Host, hs netns.HostState, live []store.Assignment, dryRun bool, rep *Report) {
	veths, ips, orphans := owned(hs, live, rep)
	remove := func(what, veth string, ip netip.Addr) {
		rep.Leftovers = append(rep.Leftovers, what)
		if dryRun {
			return
		}
		if err := host.RemoveLeftover(veth, ip); err != nil {
			rep.Failed = append(rep.Failed, fmt.Sprintf("%s: %v", what, err))
		}
	}
	for _, v := range hs.Veths {
		switch {
		case veths[v]:
		case orphans[v]: // a DELeted pod's pair whose namespace no path names (netns.DetachPod)
			remove("veth "+v+" into a namespace no path names", v, netip.Addr{})
		default:
			remove("veth "+v, v, netip.Addr{})
		}
	}
	seen := map[netip.Addr]bool{}
	for _, r := range hs.Routes {
		if !ips[r.IP] && !seen[r.IP] {
			seen[r.IP] = true
			remove(fmt.Sprintf("route %s/%d dev %s", r.IP, r.IP.BitLen(), r.Veth), "", r.IP)
		}
	}
	for _, r := range hs.Rules {
		if !ips[r.IP] && !seen[r.IP] {
			seen[r.IP] = true
			remove(fmt.Sprintf("rule prio %d for %s", r.Priority, r.IP), "", r.IP)
		}
	}
}
