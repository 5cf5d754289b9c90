package e2e

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"vpc-cni/netns"
	"vpc-cni/pool"
	"vpc-cni/store"
)

// checkInvariants records every way the quiesced node is wrong.
func (c *chaos) checkInvariants() {
	var all []store.Assignment
	var snap pool.Snapshot
	var intents []store.Intent
	c.w.view(func(tx *store.Tx) (err error) {
		if all, err = tx.Assignments(); err != nil {
			return err
		}
		if intents, err = tx.Intents(); err != nil {
			return err
		}
		snap, err = tx.Snapshot()
		return err
	})
	c.checkAssignments(all)
	c.checkWiring(all)
	c.checkEC2(snap)
	for _, in := range intents {
		c.violate("intent %s (%s %s) left after the run settled", in.ID, in.Kind, in.ENIID)
	}
	c.checkStoreFile()
	if r := c.vpcctl("doctor", "doctor"); r.err != nil {
		c.violate("vpcctl doctor: %v\n%s%s", r.err, r.stdout, r.stderr)
	}
}

// checkAssignments: every live pod has exactly one assignment, no other pod
// has any, and no address is held twice.
func (c *chaos) checkAssignments(all []store.Assignment) {
	byID := map[string]int{}
	byIP := map[netip.Addr]string{}
	for _, a := range all {
		byID[a.ContainerID]++
		if other, dup := byIP[a.IP]; dup {
			c.violate("%s assigned to %s and %s", a.IP, other, a.Key)
		}
		byIP[a.IP] = a.Key
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

// checkWiring: the node holds exactly the live pods' veths, /32 routes and
// rules, and each live pod's interface has its address.
func (c *chaos) checkWiring(all []store.Assignment) {
	var want netns.HostState
	for _, a := range all {
		want.Veths = append(want.Veths, a.HostVeth)
		want.Routes = append(want.Routes, netns.RouteInfo{IP: a.IP, Veth: a.HostVeth})
		want.Rules = append(want.Rules, netns.RuleInfo{Priority: netns.PrioToPod, IP: a.IP, Table: unix.RT_TABLE_MAIN})
		if a.DeviceIndex > 0 {
			want.Rules = append(want.Rules, netns.RuleInfo{Priority: netns.PrioFromPod, IP: a.IP, Table: a.DeviceIndex + 1})
		}
	}
	got := c.w.hostState()
	diffSets(c, "host veth", want.Veths, got.Veths)
	diffSets(c, "host route", want.Routes, got.Routes)
	diffSets(c, "pod rule", want.Rules, got.Rules)
	ips := map[string]netip.Addr{}
	for _, a := range all {
		ips[a.ContainerID] = a.IP
	}
	for _, s := range c.slots {
		if ip, ok := ips[s.p.id]; ok && s.live {
			c.checkPodSide(s.p, ip)
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

// checkPodSide: the pod's interface holds exactly its address.
func (c *chaos) checkPodSide(p *pod, ip netip.Addr) {
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
	addrs, err := h.AddrList(link, unix.AF_INET)
	if err != nil || len(addrs) != 1 || !is32(addrs[0].IPNet, ip) {
		c.violate("live pod %s: addresses %v (%v), want only %s/32", p.id, addrs, err, ip)
	}
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
			c.violate("ENI %s leaked: %s, not attached", e.ID, e.Status)
			continue
		}
		var blocks []netip.Prefix
		for _, a := range e.Secondary {
			blocks = append(blocks, netip.PrefixFrom(a, 32))
		}
		blocks = append(blocks, e.Prefixes...)
		mine, ok := inStore[e.ID]
		delete(inStore, e.ID)
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
