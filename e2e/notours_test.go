package e2e

import (
	"encoding/json"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"vpc-cni/cloud"
	"vpc-cni/netns"
	"vpc-cni/pool"
	"vpc-cni/sim/ec2sim"
	"vpc-cni/store"
)

// othersNode is r8in.96xlarge (2 network cards, 6 ENIs on card 0, 63 slots
// each) with ENIs that are not vpc-cni's, as a real node has them.
type othersNode struct {
	*world
	noManage, trunk, efaOnly, untagged, card1 ec2sim.ENI
	before                                    map[string]ec2sim.ENI // as attached, by ID
	userDetached, leaked                      ec2sim.ENI            // detached: a user's with our instance tag; one we leaked
}

func newOthersNode(t *testing.T, env []string) *othersNode {
	n := &othersNode{before: map[string]ec2sim.ENI{}}
	add := func(s *ec2sim.Sim, spec ec2sim.ENISpec) ec2sim.ENI {
		e, err := s.AddENI(spec)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	old := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	n.world = newWorld(t, worldOpts{instanceType: "r8in.96xlarge", env: env, prepare: func(s *ec2sim.Sim) []string {
		id := s.State().InstanceID
		n.noManage = add(s, ec2sim.ENISpec{Secondary: 3, Description: "multus",
			Tags: map[string]string{pool.TagNoManage: "true", cloud.TagInstanceID: id}})
		n.trunk = add(s, ec2sim.ENISpec{Type: ec2sim.TypeTrunk, Secondary: 2, Description: "aws-k8s-trunk-eni"})
		n.efaOnly = add(s, ec2sim.ENISpec{Type: ec2sim.TypeEFAOnly}) // EC2 gives an efa-only ENI no IPv4 at all
		n.untagged = add(s, ec2sim.ENISpec{Secondary: 3, Description: "storage network"})
		n.card1 = add(s, ec2sim.ENISpec{Card: 1, Secondary: 3, Description: "card one"})
		for _, e := range []ec2sim.ENI{n.noManage, n.trunk, n.efaOnly, n.untagged, n.card1} {
			n.before[e.ID] = e
		}
		tags := map[string]string{cloud.TagInstanceID: id, cloud.TagCreatedAt: old}
		n.userDetached = add(s, ec2sim.ENISpec{Detached: true, Secondary: 1, Description: "user's", Tags: tags})
		n.leaked = add(s, ec2sim.ENISpec{Detached: true, Description: cloud.DescriptionPrefix + id, Tags: tags})
		return nil
	}})
	return n
}

// TestPrivilegedNotOursENIsAreLeftAlone: the ENIs that are
// not vpc-cni's give no pod an address, keep their addresses, tags and
// attachments (no EC2 call names them), get no table, rule or address in
// the node's kernel, and count in the ENI limit and max pods; the untagged
// ENI, adopted once MANAGE_UNTAGGED_ENI=true and emptied, is never deleted;
// the leak sweep deletes only the ENI vpc-cni leaked.
func TestPrivilegedNotOursENIsAreLeftAlone(t *testing.T) {
	// r8in.96xlarge has 12 ENIs on card 0; MAX_ENI=6 fills it with few pods.
	base := []string{"WARM_ENI_TARGET=1", "IP_COOLDOWN_PERIOD=0", "RELEASE_DELAY=1", "MAX_ENI=6"}
	env := append(slices.Clone(base), "MANAGE_UNTAGGED_ENI=false")
	n := newOthersNode(t, env)
	n.assertSwept(t)
	n.assertClasses(t, map[string]string{n.noManage.ID: "no_manage", n.trunk.ID: "trunk", n.efaOnly.ID: "efa-only",
		n.untagged.ID: "untagged, MANAGE_UNTAGGED_ENI=false", n.card1.ID: "card 1"})
	// Card 0: 6 slots (MAX_ENI), the primary and 4 not ours: one left; max pods (6-4)*63+2.
	n.assertCost(t, 4, 2*63+2)

	rt := n.runtime(conflist(n.conf(nil)))
	pods := n.newPods("p", 30)
	for _, p := range pods {
		res, err := rt.add(p, nil)
		if err != nil {
			t.Fatalf("ADD %s: %v", p.name, err)
		}
		n.assertNotTheirs(t, addrOf(t, res.IPs[0].Address.IP))
	}
	n.reconcileUntilSettled(env...) // WARM_ENI_TARGET=1 needs a second ENI: the last slot of card 0
	ours := n.oursCreated(t)
	if len(ours) != 1 {
		t.Fatalf("vpc-cni created %d ENIs, want 1 (card 0's last slot): %+v", len(ours), ours)
	}
	n.assertNoRoomLeft(t, env)
	for _, p := range pods {
		if err := rt.del(p, nil); err != nil {
			t.Fatalf("DEL %s: %v", p.name, err)
		}
	}
	n.reconcileUntil(t, env, "the ENI vpc-cni created is deleted", func() bool { return len(n.oursCreated(t)) == 0 })
	n.assertUntouched(t, nil)
	n.assertKernelUntouched(t, n.before)

	// MANAGE_UNTAGGED_ENI=true: the untagged ENI is adopted; its addresses
	// are excess and go back, but the ENI itself stays.
	env = append(slices.Clone(base), "MANAGE_UNTAGGED_ENI=true")
	n.writeConfig(env)
	n.reconcileUntil(t, env, "the adopted ENI is emptied", func() bool { return len(n.simENI(t, n.untagged.ID).Secondary) == 0 })
	for range 3 {
		n.reconcile(env...)
	}
	n.assertClasses(t, map[string]string{n.untagged.ID: "untagged, MANAGE_UNTAGGED_ENI=true"})
	n.assertCost(t, 3, 3*63+2)
	adopted := n.simENI(t, n.untagged.ID)
	if adopted.Status != "in-use" || adopted.AttachmentID != n.untagged.AttachmentID || !maps.Equal(adopted.Tags, n.untagged.Tags) {
		t.Fatalf("the adopted ENI, emptied: %+v; want it attached as before, its tags unchanged", adopted)
	}
	if calls := n.sim.ENICalls(n.untagged.ID); calls["DetachNetworkInterface"]+calls["DeleteNetworkInterface"]+calls["CreateTags"] > 0 {
		t.Fatalf("calls on the adopted ENI: %v; it was detached, deleted or tagged", calls)
	}
	n.assertUntouched(t, []string{n.untagged.ID})
}

// reconcileUntil runs passes until cond holds (a minute at most).
func (n *othersNode) reconcileUntil(t *testing.T, env []string, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no pass in a minute made it so that %s", what)
		}
		n.reconcile(env...)
	}
}

func (n *othersNode) simENI(t *testing.T, id string) ec2sim.ENI {
	t.Helper()
	for _, e := range n.sim.State().ENIs {
		if e.ID == id {
			return e
		}
	}
	t.Fatalf("EC2 has no ENI %s", id)
	return ec2sim.ENI{}
}

// oursCreated lists the ENIs vpc-cni created that EC2 has.
func (n *othersNode) oursCreated(t *testing.T) []ec2sim.ENI {
	var out []ec2sim.ENI
	for _, e := range n.sim.State().ENIs {
		if _, other := n.before[e.ID]; !other && e.DeviceIndex > 0 && strings.HasPrefix(e.Description, cloud.DescriptionPrefix) {
			out = append(out, e)
		}
	}
	return out
}

// assertSwept: the first pass's sweep deleted the leaked ENI and left the
// user's detached one, which has this node's instance tag too.
func (n *othersNode) assertSwept(t *testing.T) {
	t.Helper()
	ids := map[string]bool{}
	for _, e := range n.sim.State().ENIs {
		ids[e.ID] = true
	}
	if ids[n.leaked.ID] || !ids[n.userDetached.ID] {
		t.Fatalf("after the sweep: leaked ENI there %v, user's detached ENI there %v; want false, true",
			ids[n.leaked.ID], ids[n.userDetached.ID])
	}
	if calls := n.sim.ENICalls(n.userDetached.ID); calls["DeleteNetworkInterface"]+calls["CreateTags"] > 0 {
		t.Fatalf("calls on the user's detached ENI: %v", calls)
	}
}

func (n *othersNode) assertClasses(t *testing.T, want map[string]string) {
	t.Helper()
	var snap pool.Snapshot
	n.view(func(tx *store.Tx) (err error) { snap, err = tx.Snapshot(); return err })
	got := map[string]pool.ENI{}
	for _, e := range snap.ENIs {
		got[e.ID] = e
	}
	for id, why := range want {
		e := got[id]
		class := pool.NotOurs
		if strings.Contains(why, "=true") {
			class = pool.Adopted
		}
		if e.Class != class || e.Why != why {
			t.Errorf("%s: class %q (%q), want %q (%q)", id, e.Class, e.Why, class, why)
		}
		if class == pool.NotOurs && (e.Ready || len(e.Blocks) > 0) {
			t.Errorf("%s is not ours but the store has it ready %v with %d blocks", id, e.Ready, len(e.Blocks))
		}
	}
}

// assertCost reads pool status: the not-ours ENIs on card 0 take that many
// slots, and max pods is what is left.
func (n *othersNode) assertCost(t *testing.T, slots, maxPods int) {
	t.Helper()
	r := n.vpcctl(nil, "pool", "status", "-o", "json")
	if r.err != nil {
		t.Fatalf("pool status: %v %s", r.err, r.stderr)
	}
	var st struct {
		Figures pool.Figures `json:"figures"`
		NotOurs []struct {
			ID       string `json:"id"`
			Reason   string `json:"reason"`
			ENISlots int    `json:"eniSlots"`
			MaxPods  int    `json:"maxPods"`
		} `json:"notOurs"`
	}
	if err := json.Unmarshal(r.stdout, &st); err != nil {
		t.Fatal(err)
	}
	sum := 0
	for _, e := range st.NotOurs {
		sum += e.ENISlots
		if e.Reason == "" || (e.ENISlots == 1) != (e.MaxPods == 63) {
			t.Errorf("pool status: %+v", e)
		}
	}
	if st.Figures.NotOurs != slots || sum != slots || st.Figures.MaxPods != maxPods || st.Figures.MaxENIs != 6 {
		t.Fatalf("pool status: %d slots not ours (listed %d: %+v), max pods %d, max ENIs %d; want %d, %d, 6",
			st.Figures.NotOurs, sum, st.NotOurs, st.Figures.MaxPods, st.Figures.MaxENIs, slots, maxPods)
	}
	d := n.vpcctl(nil, "doctor")
	for _, e := range st.NotOurs {
		if !strings.Contains(string(d.stdout), e.ID+" ("+e.Reason+";") {
			t.Errorf("doctor does not name %s and why (%s):\n%s", e.ID, e.Reason, d.stdout)
		}
	}
}

func (n *othersNode) assertNotTheirs(t *testing.T, ip netip.Addr) {
	t.Helper()
	for _, e := range n.before {
		if e.PrimaryIP == ip || slices.Contains(e.Secondary, ip) {
			t.Fatalf("a pod got %s, an address of %s, which is not ours", ip, e.ID)
		}
	}
}

// assertNoRoomLeft: card 0 is full (the primary, vpc-cni's ENI, 4 not
// ours), so even a target far beyond it plans no new ENI.
func (n *othersNode) assertNoRoomLeft(t *testing.T, env []string) {
	t.Helper()
	r := n.vpcctl(append(slices.Clone(env), "WARM_ENI_TARGET=5"), "reconcile", "--dry-run", "-o", "json")
	if r.err != nil {
		t.Fatalf("dry run: %v %s", r.err, r.stderr)
	}
	var rep struct {
		Plan pool.Plan `json:"plan"`
	}
	if err := json.Unmarshal(r.stdout, &rep); err != nil {
		t.Fatal(err)
	}
	for _, a := range rep.Plan.Actions {
		if a.Kind == pool.CreateENI || n.before[a.ENIID].ID != "" {
			t.Fatalf("with card 0 full the plan has %+v", a)
		}
	}
}

// assertUntouched: EC2 shows the not-ours ENIs as they were attached, and
// no call named them (except the ones in changed, adopted since).
func (n *othersNode) assertUntouched(t *testing.T, changed []string) {
	t.Helper()
	for id, was := range n.before {
		if slices.Contains(changed, id) {
			continue
		}
		now := n.simENI(t, id)
		if !slices.Equal(now.Secondary, was.Secondary) || !slices.Equal(now.Prefixes, was.Prefixes) ||
			!maps.Equal(now.Tags, was.Tags) || now.AttachmentID != was.AttachmentID ||
			now.DeviceIndex != was.DeviceIndex || now.NetworkCard != was.NetworkCard || now.Status != was.Status {
			t.Errorf("%s changed in EC2:\n was %+v\n now %+v", id, was, now)
		}
		for action, c := range n.sim.ENICalls(id) {
			if !strings.HasPrefix(action, "Describe") {
				t.Errorf("%s: %d %s calls named it", id, c, action)
			}
		}
	}
}

// assertKernelUntouched: no rule from any of their addresses or to their
// tables, no route in the tables of card 0's, no address on their links.
func (n *othersNode) assertKernelUntouched(t *testing.T, enis map[string]ec2sim.ENI) {
	t.Helper()
	n.inNode(func() error {
		rules, err := netlink.RuleList(netlink.FAMILY_V4)
		if err != nil {
			return err
		}
		links, err := netlink.LinkList()
		if err != nil {
			return err
		}
		for _, e := range enis {
			ips := append([]netip.Addr{e.PrimaryIP}, e.Secondary...)
			table := -1
			if e.NetworkCard == 0 {
				table = netns.RouteTable(e.DeviceIndex)
			}
			for _, r := range rules {
				if r.Table == table || r.Src != nil && slices.ContainsFunc(ips, func(ip netip.Addr) bool { return ip.IsValid() && r.Src.IP.Equal(ip.AsSlice()) }) {
					t.Errorf("%s: the node has rule %v", e.ID, r)
				}
			}
			if table > 0 {
				routes, err := netlink.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: table}, netlink.RT_FILTER_TABLE)
				if err != nil {
					return err
				}
				if len(routes) > 0 {
					t.Errorf("%s: table %d has %v", e.ID, table, routes)
				}
			}
			for _, l := range links {
				if !macIs(l, e.MAC) {
					continue
				}
				addrs, err := netlink.AddrList(l, netlink.FAMILY_V4)
				if err != nil {
					return err
				}
				if len(addrs) > 0 || l.Attrs().Flags&net.FlagUp != 0 {
					t.Errorf("%s: its link %s is up %v with %v", e.ID, l.Attrs().Name, l.Attrs().Flags&net.FlagUp != 0, addrs)
				}
			}
		}
		return nil
	})
}

func macIs(l netlink.Link, mac string) bool {
	return strings.EqualFold(l.Attrs().HardwareAddr.String(), mac)
}
