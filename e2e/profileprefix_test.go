package e2e

import (
	"net/netip"
	"slices"
	"testing"

	"vpc-cni/pool"
	"vpc-cni/settings"
	"vpc-cni/sim/ec2sim"
)

// With prefix delegation on, a profile's pod gets an address of a /28 that
// EC2 lists on an ENI of the profile (its tag, its group, its subnet), not
// a secondary address and not the default pool's, and reaches the VPC with
// it through that ENI.
func TestPrivilegedAProfilePodGetsAnAddressOfAPrefixOnTheProfilesENI(t *testing.T) {
	v := profilesVPC(t, "ENABLE_PREFIX_DELEGATION=true", "WARM_PREFIX_TARGET=1")
	gold, goldIP := v.profilePod("gold-pd", "gold")
	plain, plainIP := v.profilePod("plain-pd", "")
	v.syncVPC()

	st := v.w.sim.State()
	e, prefix, ok := prefixHolding(st, goldIP)
	if !ok {
		t.Fatalf("gold pod %s: no ENI lists a prefix holding it; ENIs: %+v", goldIP, st.ENIs)
	}
	if e.Tags[settings.ProfileTag] != "gold" || !slices.Equal(e.Groups, []string{goldGroup}) ||
		!goldCIDR.Contains(prefix.Addr()) || prefix.Bits() != 28 || prefix.Masked() != prefix {
		t.Fatalf("gold pod %s is of %s on %s (profile %q, groups %v, subnet %s); want an aligned /28 of %s on gold's ENI with [%s]",
			goldIP, prefix, e.ID, e.Tags[settings.ProfileTag], e.Groups, e.SubnetID, goldCIDR, goldGroup)
	}
	if slices.Contains(e.Secondary, goldIP) {
		t.Fatalf("gold pod %s is also a secondary address of %s", goldIP, e.ID)
	}
	if d, _, ok := prefixHolding(st, plainIP); !ok || d.Tags[settings.ProfileTag] != "" {
		t.Fatalf("default pod %s: on a prefix of a default ENI %v (ENI %s, profile %q)", plainIP, ok, d.ID, d.Tags[settings.ProfileTag])
	}
	for _, a := range v.w.assignments() {
		if want := map[netip.Addr]pool.Pool{goldIP: "gold", plainIP: pool.DefaultPool}[a.IP]; a.Profile != want {
			t.Fatalf("assignment of %s names profile %q, want %q", a.IP, a.Profile, want)
		}
	}

	// Only gold's group is admitted: the pod's packets leave through gold's
	// ENI with the prefix's address, the default pod's do not get in.
	v.allowOnly(clientIP, goldGroup)
	sees(t, gold.ns, clientIP, whoamiPort, goldIP)
	unreachable(t, plain.ns, clientIP, whoamiPort, "the client admits gold's group only")

	for _, p := range []*pod{gold, plain} {
		v.w.del(p, mustJSON(t, v.w.conf(nil)))
	}
	if got := v.w.assignments(); len(got) != 0 {
		t.Fatalf("assignments left: %+v", got)
	}
	v.w.checkStore()
}

// prefixHolding finds the ENI and the IPv4 prefix that hold ip.
func prefixHolding(st ec2sim.State, ip netip.Addr) (ec2sim.ENI, netip.Prefix, bool) {
	for _, e := range st.ENIs {
		for _, p := range e.Prefixes {
			if p.Contains(ip) {
				return e, p, true
			}
		}
	}
	return ec2sim.ENI{}, netip.Prefix{}, false
}
