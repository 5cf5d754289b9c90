package e2e

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"

	"vpc-cni/sim/ec2sim"
)

// Security groups in the simulated VPC: a VPC host may admit only the
// members of one group (allowOnly); a member is any address of an ENI that
// carries the group, as the emulator holds them (the groups EC2 stores per
// ENI, set at create and by ModifyNetworkInterfaceAttribute). The vpc
// namespace keeps one nftables set of member addresses per group, rebuilt by
// syncVPC, and drops what a host does not admit. Node-local traffic never
// reaches the VPC, so it is not filtered (as EC2's "standard" mode for pods).

// allowOnly makes the VPC host admit traffic only from group's members.
func (v *vpcNet) allowOnly(host netip.Addr, group string) {
	v.w.tb.Helper()
	if v.admits == nil {
		v.admits = map[netip.Addr]string{}
	}
	v.admits[host] = group
	v.syncVPC()
}

// syncGroups rebuilds the vpc namespace's table "sg" from the emulator's
// state: a set of member addresses per group, and each host's admission.
// The caller is in the vpc namespace.
func (v *vpcNet) syncGroups(state ec2sim.State) error {
	c, err := nftables.New()
	if err != nil {
		return err
	}
	t, fwd := freshForwardChain(c, nftables.TableFamilyIPv4, "sg")
	members := groupMembers(state)
	var groups []string
	for _, g := range v.admits {
		if !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
	}
	slices.Sort(groups)
	sets := map[string]*nftables.Set{}
	for i, g := range groups {
		s := &nftables.Set{Table: t, Name: fmt.Sprintf("g%d", i), KeyType: nftables.TypeIPAddr}
		var elems []nftables.SetElement
		for _, a := range members[g] {
			elems = append(elems, nftables.SetElement{Key: a.AsSlice()})
		}
		if err := c.AddSet(s, elems); err != nil {
			return err
		}
		sets[g] = s
	}
	for host, g := range v.admits {
		s := sets[g]
		c.AddRule(&nftables.Rule{Table: t, Chain: fwd, Exprs: cat(
			ipField(16, expr.CmpOpEq, host),
			[]expr.Any{
				&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 12, Len: 4},
				&expr.Lookup{SourceRegister: 1, SetName: s.Name, SetID: s.ID, Invert: true},
			},
			drop())})
	}
	return c.Flush()
}

// groupMembers maps each group to the addresses of the attached ENIs that
// carry it (primary, secondaries and every address of their prefixes).
func groupMembers(state ec2sim.State) map[string][]netip.Addr {
	out := map[string][]netip.Addr{}
	for _, e := range state.ENIs {
		if e.DeviceIndex < 0 {
			continue
		}
		addrs := eniAddrs4(e)
		for _, g := range e.Groups {
			out[g] = append(out[g], addrs...)
		}
	}
	return out
}
