package hostnet

import (
	"net/netip"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// The egress ranges' rules (the reference's egress-cni SNAT and its
// "Block Node Local Pod access" FORWARD rule), as two chains of their own:
// one SNAT rule for the whole range rather than a chain per container, so a
// pod's DEL has no nftables element to remove and none can leak.
const (
	chainEgressIn = "egress-in" // filter forward: no new connection into an egress range
	prioEgressIn  = 0
)

var (
	multicast4 = netip.MustParsePrefix("224.0.0.0/4")
	multicast6 = netip.MustParsePrefix("ff00::/8")
)

// natChain is the snat chain (nat postrouting, after kube-proxy's).
func (s *tableSpec) natChain() *nftables.Chain {
	return s.chain(&nftables.Chain{Name: chainSNAT, Table: s.table, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookPostrouting, Priority: nftables.ChainPriorityRef(prioSNAT)})
}

// addEgressSNAT: `saddr <range> daddr != <multicast> snat to <to>`.
func (s *tableSpec) addEgressSNAT(snat *nftables.Chain, r, mcast netip.Prefix, to netip.Addr, rnd Randomize) {
	s.add(snat, cat(addrIn(r, true, true), addrIn(mcast, false, false), snatTo(to, rnd))...)
}

// addEgressIn: `daddr <range> ct state new reject` in forward: the range is
// the pods' private way out, never a way in (from other pods included).
func (s *tableSpec) addEgressIn(r netip.Prefix) {
	in := s.chain(&nftables.Chain{Name: chainEgressIn, Table: s.table, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookForward, Priority: nftables.ChainPriorityRef(prioEgressIn)})
	s.add(in, cat(addrIn(r, false, true), ctNew(), reject(r.Addr()))...)
}

// reject answers port unreachable, as iptables' REJECT does by default.
func reject(family netip.Addr) []expr.Any {
	code := uint8(3) // ICMP_PORT_UNREACH
	if family.Is6() {
		code = 4 // ICMPV6_PORT_UNREACH
	}
	return []expr.Any{&expr.Reject{Type: unix.NFT_REJECT_ICMP_UNREACH, Code: code}}
}

// desired6 builds the ip6 table for cfg; nil when no rule is wanted.
func desired6(cfg Config) *tableSpec {
	if !cfg.V6EgressRange.IsValid() {
		return nil
	}
	t := &nftables.Table{Family: nftables.TableFamilyIPv6, Name: TableName}
	s := &tableSpec{table: t, tag: cfg.fingerprint6()}
	s.addEgressSNAT(s.natChain(), cfg.V6EgressRange, multicast6, cfg.PrimaryIPv6, cfg.Randomize)
	s.addEgressIn(cfg.V6EgressRange)
	return s
}
