package ec2sim

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// Slot states of one subnet address.
const (
	slotFree     uint8 = iota
	slotReserved       // the 5 addresses AWS keeps: network, +1, +2, +3, broadcast
	slotUsed           // an ENI's primary or secondary address, or inside its /28 prefix
	slotBlocked        // taken by "someone else" (SetSubnetFree, FragmentSubnet)
)

// subnetPool does the subnet's address accounting. Addresses are handed out
// lowest-free-first so tests are deterministic.
type subnetPool struct {
	id    string
	az    string
	cidr  netip.Prefix
	base  uint32
	state []uint8
	free  int
}

func newSubnetPool(cidr netip.Prefix) (*subnetPool, error) {
	if !cidr.Addr().Is4() || cidr.Bits() < 16 || cidr.Bits() > 28 {
		return nil, fmt.Errorf("subnet %s: want an IPv4 prefix between /16 and /28", cidr)
	}
	cidr = cidr.Masked()
	size := 1 << (32 - cidr.Bits())
	p := &subnetPool{cidr: cidr, base: addrToU32(cidr.Addr()), state: make([]uint8, size), free: size - 5}
	for _, off := range []int{0, 1, 2, 3, size - 1} {
		p.state[off] = slotReserved
	}
	return p, nil
}

func addrToU32(a netip.Addr) uint32 { b := a.As4(); return binary.BigEndian.Uint32(b[:]) }

func u32ToAddr(v uint32) netip.Addr {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return netip.AddrFrom4(b)
}

func (p *subnetPool) addrAt(off int) netip.Addr { return u32ToAddr(p.base + uint32(off)) }

func (p *subnetPool) offset(a netip.Addr) (int, bool) {
	if !a.Is4() || !p.cidr.Contains(a) {
		return 0, false
	}
	return int(addrToU32(a) - p.base), true
}

func (p *subnetPool) set(off int, st uint8) {
	if p.state[off] == slotFree {
		p.free--
	}
	if st == slotFree {
		p.free++
	}
	p.state[off] = st
}

// allocLowest takes the n lowest free addresses, or nothing if fewer are free.
func (p *subnetPool) allocLowest(n int) ([]netip.Addr, bool) {
	if n > p.free {
		return nil, false
	}
	out := make([]netip.Addr, 0, n)
	for off := 0; off < len(p.state) && len(out) < n; off++ {
		if p.state[off] == slotFree {
			p.set(off, slotUsed)
			out = append(out, p.addrAt(off))
		}
	}
	return out, true
}

// isFree reports whether a is an unused, unreserved address of the subnet.
func (p *subnetPool) isFree(a netip.Addr) bool {
	off, ok := p.offset(a)
	return ok && p.state[off] == slotFree
}

func (p *subnetPool) reserved(a netip.Addr) bool {
	off, ok := p.offset(a)
	return ok && p.state[off] == slotReserved
}

func (p *subnetPool) take(a netip.Addr) bool {
	if !p.isFree(a) {
		return false
	}
	off, _ := p.offset(a)
	p.set(off, slotUsed)
	return true
}

func (p *subnetPool) release(a netip.Addr) {
	if off, ok := p.offset(a); ok && p.state[off] == slotUsed {
		p.set(off, slotFree)
	}
}

// allocPrefix takes the lowest aligned /28 whose 16 addresses are all free.
func (p *subnetPool) allocPrefix() (netip.Prefix, bool) {
	for off := 0; off+16 <= len(p.state); off += 16 {
		pfx := netip.PrefixFrom(p.addrAt(off), 28)
		if p.takePrefix(pfx) {
			return pfx, true
		}
	}
	return netip.Prefix{}, false
}

// prefixFree reports whether pfx is an aligned /28 of the subnet, all free.
func (p *subnetPool) prefixFree(pfx netip.Prefix) bool {
	off, ok := p.offset(pfx.Addr())
	if !ok || pfx.Bits() != 28 || pfx.Masked() != pfx || off+16 > len(p.state) {
		return false
	}
	for i := off; i < off+16; i++ {
		if p.state[i] != slotFree {
			return false
		}
	}
	return true
}

func (p *subnetPool) takePrefix(pfx netip.Prefix) bool {
	if !p.prefixFree(pfx) {
		return false
	}
	off, _ := p.offset(pfx.Addr())
	for i := off; i < off+16; i++ {
		p.set(i, slotUsed)
	}
	return true
}

func (p *subnetPool) releasePrefix(pfx netip.Prefix) {
	off, ok := p.offset(pfx.Addr())
	if !ok {
		return
	}
	for i := off; i < off+16 && i < len(p.state); i++ {
		if p.state[i] == slotUsed {
			p.set(i, slotFree)
		}
	}
}

// setFree blocks the highest free addresses (or unblocks the lowest blocked
// ones) until n are free, as if other tenants of the subnet came or went.
func (p *subnetPool) setFree(n int) {
	for off := len(p.state) - 1; off >= 0 && p.free > n; off-- {
		if p.state[off] == slotFree {
			p.set(off, slotBlocked)
		}
	}
	for off := 0; off < len(p.state) && p.free < n; off++ {
		if p.state[off] == slotBlocked {
			p.set(off, slotFree)
		}
	}
}

// fragment blocks one address in every fully free /28, so single addresses
// remain but no prefix can be delegated (InsufficientCidrBlocks).
func (p *subnetPool) fragment() {
	for off := 0; off+16 <= len(p.state); off += 16 {
		if p.prefixFree(netip.PrefixFrom(p.addrAt(off), 28)) {
			p.set(off+15, slotBlocked)
		}
	}
}
