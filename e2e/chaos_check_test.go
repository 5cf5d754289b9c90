package e2e

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"vpc-cni/cloud"
	"vpc-cni/netns"
	"vpc-cni/pool"
	"vpc-cni/sim/ec2sim"
	"vpc-cni/store"
)

// checkInvariants records every way the quiesced node is wrong.
func (c *chaos) checkInvariants() {
	var all []store.Assignment
	var snap pool.Snapshot
	var intents []store.Intent
	var waiting int
	c.w.view(func(tx *store.Tx) (err error) {
		if all, err = tx.Assignments(); err != nil {
			return err
		}
		if waiting, err = waitingDefault(tx); err != nil {
			return err
		}
		if intents, err = tx.Intents(); err != nil {
			return err
		}
		snap, err = tx.Snapshot()
		return err
	})
	c.checkAssignments(all)
	c.checkProfiles(all)
	c.checkWiring(all)
	c.checkEC2(snap)
	c.checkIPv6InEC2(all)
	c.checkOthers()
	c.checkReleases()
	if waiting > 0 { // every ADD ended, and every failed one's sandbox was DELed
		c.violate("%d ADDs still count as waiting for an inline grow after the run settled", waiting)
	}
	for _, in := range intents {
		c.violate("intent %s (%s %s) left after the run settled", in.ID, in.Kind, in.ENIID)
	}
	c.checkStoreFile()
	if r := c.vpcctl("doctor", "doctor"); r.err != nil {
		c.violate("vpcctl doctor: %v\n%s%s", r.err, r.stdout, r.stderr)
	}
}

// checkAssignments: every live pod has exactly one assignment, no other pod
// has any, no address (IPv4, IPv6 /128 or egress) is held twice, and each
// pod has the families the mode gives.
func (c *chaos) checkAssignments(all []store.Assignment) {
	byID := map[string]int{}
	byIP := map[netip.Addr]string{}
	for _, a := range all {
		byID[a.ContainerID]++
		for _, ip := range []netip.Addr{a.IP, a.IPv6, a.EgressIP} {
			if !ip.IsValid() {
				continue
			}
			if other, dup := byIP[ip]; dup {
				c.violate("%s assigned to %s and %s", ip, other, a.Key)
			}
			byIP[ip] = a.Key
		}
		c.checkFamilies(a)
	}
	for _, s := range c.slots {
		if n := byID[s.p.id]; s.live && n != 1 {
			c.violate("live pod %s has %d assignments, want 1", s.p.id, n)
		}
		if s.live {
			delete(byID, s.p.id)
		}
	}
	for id := range byID {
		c.violate("assignment for %s, a sandbox that is gone", id)
	}
}

// checkFamilies: the assignment holds what the run's mode gives a pod.
func (c *chaos) checkFamilies(a store.Assignment) {
	want4, want6, wantEgress := true, false, false
	switch *chaosFamily {
	case "ipv6":
		want4, want6, wantEgress = false, true, true
	case "dual":
		want6 = true
	}
	if a.IP.IsValid() != want4 || a.IPv6.IsValid() != want6 || a.EgressIP.IsValid() != wantEgress {
		c.violate("%s holds IPv4 %s, IPv6 %s, egress %s: not what %s mode gives", a.Key, a.IP, a.IPv6, a.EgressIP, *chaosFamily)
	}
}

// checkWiring: the node holds exactly the live pods' veths, /32 and /128
// routes and rules, and each live pod's interface has its addresses.
func (c *chaos) checkWiring(all []store.Assignment) {
	var want netns.HostState
	for _, a := range all {
		want.Veths = append(want.Veths, a.HostVeth)
		for _, ip := range []netip.Addr{a.IP, a.IPv6} {
			if !ip.IsValid() {
				continue
			}
			want.Routes = append(want.Routes, netns.RouteInfo{IP: ip, Veth: a.HostVeth})
			want.Rules = append(want.Rules, netns.RuleInfo{Priority: netns.PrioToPod, IP: ip, Table: unix.RT_TABLE_MAIN})
			// A from-rule only for IPv4 on a secondary ENI: a pod's IPv6 is
			// the primary ENI's /80's and routes by main (netns.Pod.TableFor).
			if a.DeviceIndex > 0 && ip.Is4() {
				want.Rules = append(want.Rules, netns.RuleInfo{Priority: netns.PrioFromPod, IP: ip, Table: a.DeviceIndex + 1})
			}
		}
	}
	got := c.w.hostState()
	diffSets(c, "host veth", want.Veths, got.Veths)
	diffSets(c, "host route", want.Routes, got.Routes)
	diffSets(c, "pod rule", want.Rules, got.Rules)
	held := map[string]store.Assignment{}
	for _, a := range all {
		held[a.ContainerID] = a
	}
	for _, s := range c.slots {
		if a, ok := held[s.p.id]; ok && s.live {
			c.checkPodSide(s.p, a)
		}
	}
}

func diffSets[T comparable](c *chaos, what string, want, got []T) {
	for _, g := range got {
		if !slices.Contains(want, g) {
			c.violate("%s %+v left on the node", what, g)
		}
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			c.violate("%s %+v missing", what, w)
		}
	}
}

// checkPodSide: the pod's interface holds exactly its addresses (link-local
// ones aside), and an egress address is on its egress interface.
func (c *chaos) checkPodSide(p *pod, a store.Assignment) {
	h, err := netlink.NewHandleAt(vnetns.NsHandle(p.ns.Fd()))
	if err != nil {
		c.violate("netlink in %s: %v", p.id, err)
		return
	}
	defer h.Close()
	link, err := h.LinkByName(p.ifname)
	if err != nil {
		c.violate("live pod %s has no %s: %v", p.id, p.ifname, err)
		return
	}
	want := podIPsOf(a)
	if got, err := globalAddrs(h, link); err != nil || !slices.Equal(got, want) {
		c.violate("live pod %s: addresses %v (%v), want only %v, each a single-address prefix", p.id, got, err, want)
	}
	if !a.EgressIP.IsValid() {
		return
	}
	if l, err := h.LinkByName(netns.EgressV4IfName); err != nil {
		c.violate("live pod %s has no %s: %v", p.id, netns.EgressV4IfName, err)
	} else if got, err := globalAddrs(h, l); err != nil || len(got) != 1 || got[0] != a.EgressIP {
		c.violate("live pod %s: %s has %v (%v), want %s", p.id, netns.EgressV4IfName, got, err, a.EgressIP)
	}
}

// globalAddrs are link's addresses but link-local ones, IPv4 first; an
// address on the pod interface that is not a /32 or /128 is returned
// invalid, so it never matches. (v4if0's /22 is the reference's.)
func globalAddrs(h *netlink.Handle, link netlink.Link) ([]netip.Addr, error) {
	addrs, err := h.AddrList(link, netlink.FAMILY_ALL)
	var out []netip.Addr
	for _, ad := range addrs {
		ip, _ := netip.AddrFromSlice(ad.IP)
		ip = ip.Unmap()
		if ip.Is6() && ip.IsLinkLocalUnicast() {
			continue
		}
		if ones, bits := ad.Mask.Size(); ones != bits && link.Attrs().Name != netns.EgressV4IfName {
			ip = netip.Addr{}
		}
		out = append(out, ip)
	}
	slices.SortFunc(out, func(x, y netip.Addr) int { return x.Compare(y) })
	return out, err
}

// awaitingSweep: an unattached ENI of ours younger than the leak sweep's
// grace (5 minutes; a pass under a wiped state dir may still be attaching
// it) is deleted by the first pass after it comes of age, not yet a leak.
func awaitingSweep(e ec2sim.ENI, now time.Time) bool {
	created, err := time.Parse(time.RFC3339, e.Tags[cloud.TagCreatedAt])
	return err == nil && strings.HasPrefix(e.Description, cloud.DescriptionPrefix) && now.Sub(created) <= 5*time.Minute
}

// checkEC2: the emulator and the store agree on every ENI and block, and
// no ENI is left unattached.
func (c *chaos) checkEC2(snap pool.Snapshot) {
	inStore := map[string][]netip.Prefix{}
	for _, e := range snap.ENIs {
		for _, b := range e.Blocks {
			inStore[e.ID] = append(inStore[e.ID], b.CIDR)
		}
		if _, ok := inStore[e.ID]; !ok {
			inStore[e.ID] = nil
		}
	}
	for _, e := range c.w.sim.State().ENIs {
		if e.DeviceIndex < 0 {
			if !awaitingSweep(e, time.Now()) {
				c.violate("ENI %s leaked: %s, not attached", e.ID, e.Status)
			}
			continue
		}
		var blocks []netip.Prefix
		for _, a := range e.Secondary {
			blocks = append(blocks, netip.PrefixFrom(a, 32))
		}
		blocks = append(blocks, e.Prefixes...)
		mine, ok := inStore[e.ID]
		delete(inStore, e.ID)
		if _, other := c.others[e.ID]; other {
			continue // checkOthers: the store keeps none of their addresses
		}
		if !ok {
			c.violate("ENI %s attached in EC2, unknown to the store", e.ID)
			continue
		}
		if fmt.Sprint(sortedPrefixes(mine)) != fmt.Sprint(sortedPrefixes(blocks)) {
			c.violate("ENI %s: the store holds %v, EC2 %v", e.ID, mine, blocks)
		}
	}
	for id := range inStore {
		c.violate("ENI %s in the store, not in EC2", id)
	}
}

// checkIPv6InEC2: every pod's /128 lies in a /80 EC2 lists on the
// primary ENI (EC2 routes only those to the node; a dual-stack pod's IPv4
// may be on another ENI), and never is the /80's network address.
func (c *chaos) checkIPv6InEC2(all []store.Assignment) {
	state := c.w.sim.State()
	primary := state.ENIs[0]
	for _, e := range state.ENIs {
		if e.DeviceIndex == 0 {
			primary = e
		}
	}
	for _, a := range all {
		if !a.IPv6.IsValid() {
			continue
		}
		ok := slices.ContainsFunc(primary.IPv6Prefixes, func(p netip.Prefix) bool { return p.Contains(a.IPv6) && p.Addr() != a.IPv6 })
		if !ok {
			c.violate("%s holds %s, not a host of a /80 EC2 lists on the primary ENI %s (%v)", a.Key, a.IPv6, primary.ID, primary.IPv6Prefixes)
		}
	}
}

// checkOthers: no not-ours ENI's addresses, tags or attachment changed, no
// EC2 call but a Describe named one, and the store gives pods none of them.
func (c *chaos) checkOthers() {
	now := map[string]ec2sim.ENI{}
	for _, e := range c.w.sim.State().ENIs {
		now[e.ID] = e
	}
	for id, was := range c.others {
		e, ok := now[id]
		switch {
		case !ok:
			c.violate("not-ours ENI %s is gone from EC2", id)
			continue
		case !slices.Equal(e.Secondary, was.Secondary) || !slices.Equal(e.Prefixes, was.Prefixes):
			c.violate("not-ours ENI %s: addresses %v %v, were %v %v", id, e.Secondary, e.Prefixes, was.Secondary, was.Prefixes)
		case !maps.Equal(e.Tags, was.Tags):
			c.violate("not-ours ENI %s: tags %v, were %v", id, e.Tags, was.Tags)
		case e.AttachmentID != was.AttachmentID || e.DeviceIndex != was.DeviceIndex || e.Status != was.Status:
			c.violate("not-ours ENI %s: attachment %s device %d %s, was %s device %d %s", id,
				e.AttachmentID, e.DeviceIndex, e.Status, was.AttachmentID, was.DeviceIndex, was.Status)
		}
		for action, n := range c.w.sim.ENICalls(id) {
			if !strings.HasPrefix(action, "Describe") {
				c.violate("not-ours ENI %s: %d %s calls named it", id, n, action)
			}
		}
		for _, a := range c.w.assignments() {
			if slices.Contains(was.Secondary, a.IP) || a.ENIID == id {
				c.violate("pod %s holds %s of not-ours ENI %s", a.Key, a.IP, id)
			}
		}
	}
}

func sortedPrefixes(p []netip.Prefix) []netip.Prefix {
	out := slices.Clone(p)
	slices.SortFunc(out, func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr()) })
	return out
}

// checkStoreFile: the file passes bbolt's page walk and the store's own check.
func (c *chaos) checkStoreFile() {
	st, err := store.Open(c.w.stateDir, store.Options{ReadOnly: true})
	if err == nil {
		err = st.CheckFile()
	}
	if err == nil {
		err = st.View(func(tx *store.Tx) error { return tx.Check() })
	}
	if err != nil {
		c.violate("state file: %v", err)
	}
}

// waitingDefault counts the ADDs waiting now for the default pool.
func waitingDefault(tx *store.Tx) (int, error) {
	by, err := tx.Waiting(time.Now())
	return by[pool.DefaultPool], err
}
