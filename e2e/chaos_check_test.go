package e2e

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"vpc-cni/internal/ec2sim"
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
	c.checkOthers()
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
