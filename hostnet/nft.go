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
}

// desired builds the whole table for cfg; nil when no rule is wanted.
func desired(cfg Config) *tableSpec {
	if !cfg.snat() && !cfg.fwmark() {
		return nil
	}
	t := &nftables.Table{Family: nftables.TableFamilyIPv4, Name: TableName}
	s := &tableSpec{table: t}
	tag := cfg.fingerprint()
	add := func(c *nftables.Chain, exprs ...expr.Any) {
		comment := fmt.Sprintf("vpc-cni %s %d", tag, len(s.rules))
		s.rules = append(s.rules, &nftables.Rule{Table: t, Chain: c, Exprs: exprs,
			UserData: userdata.AppendString(nil, userdata.TypeComment, comment)})
	}
	mark := s.chain(&nftables.Chain{Name: chainMark, Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookPrerouting, Priority: nftables.ChainPriorityMangle})
	if cfg.nodePortMark() {
		// A connection addressed to the node on its primary ENI (NodePort,
		// load balancer with instance targets) leaves the way it came.
		add(mark, cat(ifname(expr.MetaKeyIIFNAME, cfg.PrimaryIf, true, false), localDst(true), setCtMark(cfg.Mark))...)
	}
	// Every packet from a pod of a marked connection carries the mark, so
	// `fwmark lookup main` routes it out of the primary ENI.
	add(mark, cat(ifname(expr.MetaKeyIIFNAME, cfg.VethPrefix, false, false), ctMarkHas(cfg.Mark), setMetaMark(cfg.Mark))...)
	if cfg.snat() {
		pods := s.chain(&nftables.Chain{Name: chainPods, Table: t, Type: nftables.ChainTypeFilter,
			Hooknum: nftables.ChainHookPrerouting, Priority: nftables.ChainPriorityRef(prioPods)})
		egress := s.chain(&nftables.Chain{Name: chainEgress, Table: t})
		add(pods, cat(ifname(expr.MetaKeyIIFNAME, cfg.VethPrefix, false, false), ctNew(), jump(chainEgress))...)
		for _, p := range cfg.noSNAT() {
			add(egress, cat(daddrIn(p), verdict(expr.VerdictReturn))...)
		}
		add(egress, setCtMark(cfg.Mark)...)
		add(egress, setMetaMark(cfg.Mark)...) // this first packet passed the restore already
	}
	if cfg.snat() {
		snat := s.chain(&nftables.Chain{Name: chainSNAT, Table: t, Type: nftables.ChainTypeNAT,
			Hooknum: nftables.ChainHookPostrouting, Priority: nftables.ChainPriorityRef(prioSNAT)})
		for _, p := range cfg.noSNAT() {
			add(snat, cat(daddrIn(p), verdict(expr.VerdictReturn))...)
		}
		add(snat, cat(ifname(expr.MetaKeyIIFNAME, cfg.VethPrefix, false, false), ifname(expr.MetaKeyOIFNAME, "vlan", false, true),
			localDst(false), snatTo(cfg.PrimaryIP, cfg.Randomize))...)
	}
	return s
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

func daddrIn(p netip.Prefix) []expr.Any {
	m := make([]byte, 4)
	for i := 0; i < p.Bits(); i++ {
		m[i/8] |= 0x80 >> (i % 8)
	}
	return []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: m, Xor: make([]byte, 4)},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: p.Masked().Addr().AsSlice()},
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
		&expr.NAT{Type: expr.NATTypeSourceNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: 1, RegAddrMax: 1,
			Random: r == RandomHash, FullyRandom: r == RandomPRNG},
	}
}
