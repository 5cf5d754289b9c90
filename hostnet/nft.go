package hostnet

import (
	"fmt"
	"net/netip"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/userdata"
	"golang.org/x/sys/unix"
)

// TableName is our nftables table (family ip). We own it whole: kube-proxy
// and iptables never touch it, and we never touch theirs.
const TableName = "vpc-cni"

// Chain names and priorities. NodePort marking runs at mangle priority,
// before kube-proxy's DNAT (-100), while the destination is still the node's
// address. Egress marking runs after that DNAT (-90), so a service address
// that kube-proxy turned into a VPC endpoint is not taken for the internet
// (the reference's nat-table chain likewise never sees DNATed packets). SNAT
// runs after iptables' and kube-proxy's nat POSTROUTING (100), so their
// masquerade decisions come first, as the reference's chain appended after
// KUBE-POSTROUTING.
const (
	chainSNAT   = "snat"   // nat postrouting: pod egress to the primary address
	chainMark   = "mark"   // filter prerouting, mangle: NodePort connmark, and the mark restored on pod packets
	chainPods   = "pods"   // filter prerouting, after DNAT: new pod connections go to egress
	chainEgress = "egress" // regular: marks a new pod connection unless its destination is in the VPC
	prioPods    = -90
	prioSNAT    = 110
)

type tableSpec struct {
	table  *nftables.Table
	chains []*nftables.Chain
	rules  []*nftables.Rule
	tag    string // the configuration's fingerprint, in every rule's comment
}

// add appends a rule to c, tagged with the fingerprint and its position.
func (s *tableSpec) add(c *nftables.Chain, exprs ...expr.Any) {
	comment := fmt.Sprintf("vpc-cni %s %d", s.tag, len(s.rules))
	s.rules = append(s.rules, &nftables.Rule{Table: s.table, Chain: c, Exprs: exprs,
		UserData: userdata.AppendString(nil, userdata.TypeComment, comment)})
}

// desired builds the whole ip table for cfg; nil when no rule is wanted.
func desired(cfg Config) *tableSpec {
	egress := cfg.V4EgressRange.IsValid()
	if !cfg.snat() && !cfg.fwmark() && !egress {
		return nil
	}
	t := &nftables.Table{Family: nftables.TableFamilyIPv4, Name: TableName}
	s := &tableSpec{table: t, tag: cfg.fingerprint()}
	if cfg.fwmark() {
		s.addMark(cfg)
	}
	if cfg.snat() {
		s.addPodEgress(cfg)
	}
	if cfg.snat() || egress {
		snat := s.natChain()
		if egress {
			s.addEgressSNAT(snat, cfg.V4EgressRange, multicast4, cfg.PrimaryIP, cfg.Randomize)
		}
		if cfg.snat() {
			for _, p := range cfg.noSNAT() {
				s.add(snat, cat(addrIn(p, false, true), verdict(expr.VerdictReturn))...)
			}
			for _, p := range cfg.KeepSource {
				s.add(snat, cat(addrIn(p, true, true), verdict(expr.VerdictReturn))...)
			}
			s.add(snat, cat(ifname(expr.MetaKeyIIFNAME, cfg.VethPrefix, false, false), ifname(expr.MetaKeyOIFNAME, "vlan", false, true),
				localDst(false), snatTo(cfg.PrimaryIP, cfg.Randomize))...)
		}
	}
	if egress {
		s.addEgressIn(cfg.V4EgressRange)
	}
	return s
}

func (s *tableSpec) addMark(cfg Config) {
	t := s.table
	mark := s.chain(&nftables.Chain{Name: chainMark, Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookPrerouting, Priority: nftables.ChainPriorityMangle})
	if cfg.nodePortMark() {
		// A connection addressed to the node on its primary ENI (NodePort,
		// load balancer with instance targets) leaves the way it came.
		s.add(mark, cat(ifname(expr.MetaKeyIIFNAME, cfg.PrimaryIf, true, false), localDst(true), setCtMark(cfg.Mark))...)
	}
	// Every packet from a pod of a marked connection carries the mark, so
	// `fwmark lookup main` routes it out of the primary ENI.
	s.add(mark, cat(ifname(expr.MetaKeyIIFNAME, cfg.VethPrefix, false, false), ctMarkHas(cfg.Mark), setMetaMark(cfg.Mark))...)
}

func (s *tableSpec) addPodEgress(cfg Config) {
	t := s.table
	pods := s.chain(&nftables.Chain{Name: chainPods, Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookPrerouting, Priority: nftables.ChainPriorityRef(prioPods)})
	egress := s.chain(&nftables.Chain{Name: chainEgress, Table: t})
	s.add(pods, cat(ifname(expr.MetaKeyIIFNAME, cfg.VethPrefix, false, false), ctNew(), jump(chainEgress))...)
	for _, p := range cfg.noSNAT() {
		s.add(egress, cat(addrIn(p, false, true), verdict(expr.VerdictReturn))...)
	}
	for _, p := range cfg.KeepSource {
		s.add(egress, cat(addrIn(p, true, true), verdict(expr.VerdictReturn))...)
	}
	s.add(egress, setCtMark(cfg.Mark)...)
	s.add(egress, setMetaMark(cfg.Mark)...) // this first packet passed the restore already
}

func (s *tableSpec) chain(c *nftables.Chain) *nftables.Chain {
	s.chains = append(s.chains, c)
	return c
}

func cat(parts ...[]expr.Any) []expr.Any {
	var out []expr.Any
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// ifname matches an interface name exactly, or by prefix (as iptables' eni+);
// negate inverts the match.
func ifname(key expr.MetaKey, name string, exact, negate bool) []expr.Any {
	data := []byte(name)
	if exact {
		data = make([]byte, unix.IFNAMSIZ)
		copy(data, name)
	}
	op := expr.CmpOpEq
	if negate {
		op = expr.CmpOpNeq
	}
	return []expr.Any{&expr.Meta{Key: key, Register: 1}, &expr.Cmp{Op: op, Register: 1, Data: data}}
}

// localDst matches a destination that is (or is not) an address of the node;
// on the incoming interface only when local (iptables' --limit-iface-in).
func localDst(local bool) []expr.Any {
	op := expr.CmpOpNeq
	if local {
		op = expr.CmpOpEq
	}
	return []expr.Any{
		&expr.Fib{Register: 1, FlagDADDR: true, FlagIIF: local, ResultADDRTYPE: true},
		&expr.Cmp{Op: op, Register: 1, Data: binaryutil.NativeEndian.PutUint32(unix.RTN_LOCAL)},
	}
}

// addrIn matches the source (src) or destination address in p (in: or not
// in p), in p's family's header.
func addrIn(p netip.Prefix, src, in bool) []expr.Any {
	size := uint32(p.Addr().BitLen() / 8)
	offset := map[bool]uint32{false: 16, true: 12}[src] // IPv4 header
	if size == 16 {
		offset = map[bool]uint32{false: 24, true: 8}[src]
	}
	m := make([]byte, size)
	for i := 0; i < p.Bits(); i++ {
		m[i/8] |= 0x80 >> (i % 8)
	}
	op := expr.CmpOpEq
	if !in {
		op = expr.CmpOpNeq
	}
	return []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: size},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: size, Mask: m, Xor: make([]byte, size)},
		&expr.Cmp{Op: op, Register: 1, Data: p.Masked().Addr().AsSlice()},
	}
}

func ctNew() []expr.Any {
	return []expr.Any{
		&expr.Ct{Key: expr.CtKeySTATE, Register: 1},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: binaryutil.NativeEndian.PutUint32(expr.CtStateBitNEW), Xor: make([]byte, 4)},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: make([]byte, 4)},
	}
}

// orMark is `x | mark` as nftables computes it: (x & ^mark) ^ mark.
func orMark(mark uint32) *expr.Bitwise {
	return &expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
		Mask: binaryutil.NativeEndian.PutUint32(^mark), Xor: binaryutil.NativeEndian.PutUint32(mark)}
}

func setCtMark(mark uint32) []expr.Any {
	return []expr.Any{&expr.Ct{Key: expr.CtKeyMARK, Register: 1}, orMark(mark),
		&expr.Ct{Key: expr.CtKeyMARK, Register: 1, SourceRegister: true}}
}

func ctMarkHas(mark uint32) []expr.Any {
	return []expr.Any{
		&expr.Ct{Key: expr.CtKeyMARK, Register: 1},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: binaryutil.NativeEndian.PutUint32(mark), Xor: make([]byte, 4)},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.NativeEndian.PutUint32(mark)},
	}
}

func setMetaMark(mark uint32) []expr.Any {
	return []expr.Any{&expr.Meta{Key: expr.MetaKeyMARK, Register: 1}, orMark(mark),
		&expr.Meta{Key: expr.MetaKeyMARK, Register: 1, SourceRegister: true}}
}

func jump(chain string) []expr.Any {
	return []expr.Any{&expr.Verdict{Kind: expr.VerdictJump, Chain: chain}}
}

func verdict(k expr.VerdictKind) []expr.Any { return []expr.Any{&expr.Verdict{Kind: k}} }

func snatTo(ip netip.Addr, r Randomize) []expr.Any {
	return []expr.Any{
		&expr.Immediate{Register: 1, Data: ip.AsSlice()},
		&expr.NAT{Type: expr.NATTypeSourceNAT, Family: natFamily(ip), RegAddrMin: 1, RegAddrMax: 1,
			Random: r == RandomHash, FullyRandom: r == RandomPRNG},
	}
}

func natFamily(ip netip.Addr) uint32 {
	if ip.Is4() {
		return unix.NFPROTO_IPV4
	}
	return unix.NFPROTO_IPV6
}
