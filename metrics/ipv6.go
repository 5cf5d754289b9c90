package metrics

import "fmt"

// IPv6 is the IPv6 pool's figures (nil in Input on an IPv4-only node that
// hands out no egress addresses: those series are then absent).
type IPv6 struct {
	IPv6Pods  bool // pods take /128s (ENABLE_IPv6); false: only egress addresses
	DualStack bool // pods take an IPv4 too, so the reference's series keep IPv4's meaning
	Prefix    bool // the /80 pods take from is on the ENI
	Assigned  int  // /128s pods hold
	Cooling   int  // freed /128s still cooling
	Stale     int  // of Assigned: from a /80 the ENI no longer has
	Egress    int  // v4if0/v6if0 addresses pods hold
}

// AddressesPerPrefix is what the reference counts for a /80 in
// awscni_total_ip_addresses: 2^48.
const AddressesPerPrefix = 1 << 48

func (m *writer) ipv6(v *IPv6) {
	if v == nil {
		return
	}
	if v.IPv6Pods {
		m.header("vpc_cni_ipv6_addresses", "gauge", "IPv6 /128s of the node's /80, by state")
		for _, s := range []struct {
			state string
			n     int
		}{{"assigned", v.Assigned}, {"cooling", v.Cooling}} {
			m.sample("vpc_cni_ipv6_addresses", fmt.Sprintf(`state=%q`, s.state), float64(s.n))
		}
		m.gauge("vpc_cni_ipv6_stale_addresses", "IPv6 /128s pods hold from a /80 the ENI no longer has", float64(v.Stale))
		m.gauge("vpc_cni_ipv6_prefix_present", "1 while the /80 pods take IPv6 from is on the ENI", boolf(v.Prefix))
	}
	m.gauge("vpc_cni_egress_addresses", "egress addresses (v4if0, v6if0) pods hold", float64(v.Egress))
}

// referenceTotals are awscni_total_ip_addresses and
// awscni_assigned_ip_addresses as the reference counts them: in IPv6 mode
// 2^48 per /80 and the /128s assigned; otherwise (dual-stack too, which
// the reference lacks: IPv4 is the pool that runs out) the IPv4 pool's.
func referenceTotals(in Input) (total, assigned float64) {
	if v := in.IPv6; v != nil && v.IPv6Pods && !v.DualStack {
		return boolf(v.Prefix) * AddressesPerPrefix, float64(v.Assigned)
	}
	return float64(in.Figures.Total), float64(in.Figures.Assigned)
}
