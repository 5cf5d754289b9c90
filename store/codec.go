package store

import (
	"encoding/binary"
	"fmt"
	"math"
	"net/netip"
	"time"

	"vpc-cni/pool"
)

// Binary encodings for the per-address records, which are many and on the
// Take path. Every value starts with a format byte so it can evolve.
const recordV1 = 1

// ipKey is [4|6][address bytes]: byte order is address order, IPv4 first.
func ipKey(ip netip.Addr) []byte {
	if ip.Is4() {
		b := ip.As4()
		return append([]byte{4}, b[:]...)
	}
	b := ip.As16()
	return append([]byte{6}, b[:]...)
}

func parseIPKey(k []byte) (netip.Addr, error) {
	switch {
	case len(k) == 5 && k[0] == 4:
		return netip.AddrFrom4([4]byte(k[1:])), nil
	case len(k) == 17 && k[0] == 6:
		return netip.AddrFrom16([16]byte(k[1:])), nil
	}
	return netip.Addr{}, fmt.Errorf("bad address key %x", k)
}

// prefixKey is ipKey(prefix address) then the prefix length, so keys sort
// as blocks are ordered (address, then length).
func prefixKey(p netip.Prefix) []byte { return append(ipKey(p.Addr()), byte(p.Bits())) }

func parsePrefixKey(k []byte) (netip.Prefix, error) {
	if len(k) < 2 {
		return netip.Prefix{}, fmt.Errorf("bad prefix key %x", k)
	}
	ip, err := parseIPKey(k[:len(k)-1])
	if err != nil {
		return netip.Prefix{}, err
	}
	return ip.Prefix(int(k[len(k)-1]))
}

// blockKey is the ENI ID, a zero byte, then prefixKey: one ENI's blocks are
// contiguous and ascending.
func blockKey(eniID string, p netip.Prefix) []byte {
	return append(append([]byte(eniID), 0), prefixKey(p)...)
}

func blockKeyPrefix(eniID string) []byte { return append([]byte(eniID), 0) }

// availKey is [device index, big endian][ipKey]: the first key of the avail
// bucket is the address the policy picks (lowest device index, then lowest
// address; blocks do not overlap, so that is also lowest block first).
func availKey(dev int, ip netip.Addr) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(dev)), ipKey(ip)...)
}

// availFrom is where the avail entries of device dev and above begin.
func availFrom(dev int) []byte { return binary.BigEndian.AppendUint32(nil, uint32(max(dev, 0))) }

func parseAvailKey(k []byte) (int, netip.Addr, error) {
	if len(k) < 4 {
		return 0, netip.Addr{}, fmt.Errorf("bad avail key %x", k)
	}
	ip, err := parseIPKey(k[4:])
	return int(binary.BigEndian.Uint32(k)), ip, err
}

const zeroTime = math.MinInt64

func appendTime(b []byte, t time.Time) []byte {
	n := int64(zeroTime)
	if !t.IsZero() {
		n = t.UnixNano()
	}
	return binary.BigEndian.AppendUint64(b, uint64(n))
}

func readTime(b []byte) time.Time {
	n := int64(binary.BigEndian.Uint64(b))
	if n == zeroTime {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

var stateCodes = map[pool.State]byte{pool.Free: 'f', pool.Assigned: 'a', pool.Cooling: 'c', pool.Releasing: 'r'}

func stateByte(s pool.State) (byte, error) {
	if c, ok := stateCodes[s]; ok {
		return c, nil
	}
	return 0, fmt.Errorf("address state %q: %w", s, ErrInvalid)
}

func byteState(c byte) (pool.State, error) {
	for s, code := range stateCodes {
		if code == c {
			return s, nil
		}
	}
	return "", fmt.Errorf("bad address state code %q", c)
}

// addrRecord is one address as stored: where it lives and its lifecycle.
type addrRecord struct {
	ENIID string
	Block netip.Prefix
	State pool.State
	Since time.Time
	Owner string
}

// Layout: [v][state][since 8][len][ENI ID][len][prefix key][owner ...].
func (r addrRecord) encode() ([]byte, error) {
	st, err := stateByte(r.State)
	if err != nil {
		return nil, err
	}
	pk := prefixKey(r.Block)
	if len(r.ENIID) > 255 {
		return nil, fmt.Errorf("ENI ID %q too long: %w", r.ENIID, ErrInvalid)
	}
	b := make([]byte, 0, 12+len(r.ENIID)+len(pk)+len(r.Owner))
	b = append(b, recordV1, st)
	b = appendTime(b, r.Since)
	b = append(append(b, byte(len(r.ENIID))), r.ENIID...)
	b = append(append(b, byte(len(pk))), pk...)
	return append(b, r.Owner...), nil
}

func decodeAddr(b []byte) (addrRecord, error) {
	bad := func() error { return fmt.Errorf("bad address record %x", b) }
	if len(b) < 11 || b[0] != recordV1 {
		return addrRecord{}, bad()
	}
	var r addrRecord
	var err error
	if r.State, err = byteState(b[1]); err != nil {
		return r, err
	}
	r.Since = readTime(b[2:10])
	rest := b[10:]
	n := int(rest[0])
	if len(rest) < 1+n+1 {
		return r, bad()
	}
	r.ENIID, rest = string(rest[1:1+n]), rest[1+n:]
	n = int(rest[0])
	if len(rest) < 1+n {
		return r, bad()
	}
	if r.Block, err = parsePrefixKey(rest[1 : 1+n]); err != nil {
		return r, err
	}
	r.Owner = string(rest[1+n:])
	return r, nil
}

// availValue is [v][state][since]: enough for Take to skip cooling entries
// without reading the address record.
func availValue(r addrRecord) []byte {
	st, _ := stateByte(r.State)
	return appendTime([]byte{recordV1, st}, r.Since)
}

func decodeAvail(b []byte) (pool.State, time.Time, error) {
	if len(b) != 10 || b[0] != recordV1 {
		return "", time.Time{}, fmt.Errorf("bad avail value %x", b)
	}
	st, err := byteState(b[1])
	return st, readTime(b[2:]), err
}

// blockValue is [v][releasing].
func blockValue(releasing bool) []byte {
	if releasing {
		return []byte{recordV1, 1}
	}
	return []byte{recordV1, 0}
}

func decodeBlock(b []byte) (releasing bool, err error) {
	if len(b) != 2 || b[0] != recordV1 {
		return false, fmt.Errorf("bad block value %x", b)
	}
	return b[1] == 1, nil
}
