package netns

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"
)

// icmpKind is what differs between ICMP and ICMPv6 echo: the socket, the
// message types and the length of the IP header an error quotes.
type icmpKind struct {
	network, laddr          string
	request, reply, unreach byte
	quotedHeader            func(b []byte) int
}

var (
	icmp4 = icmpKind{"ip4:icmp", "0.0.0.0", 8, 0, 3, func(b []byte) int { return int(b[0]&0x0f) * 4 }}
	icmp6 = icmpKind{"ip6:ipv6-icmp", "::", 128, 129, 1, func([]byte) int { return 40 }}
)

// Ping sends one ICMP (or ICMPv6) echo to dst from the calling thread's
// network namespace and waits for the reply; it needs no ping binary (only
// CAP_NET_RAW). A link-local IPv6 dst needs its zone (fe80::1%eth0). An
// unreachable quoting our echo fails at once.
func Ping(dst netip.Addr, timeout time.Duration) (time.Duration, error) {
	k := icmp4
	if dst.Is6() && !dst.Is4In6() {
		k = icmp6
	}
	conn, err := net.ListenPacket(k.network, k.laddr)
	if err != nil {
		return 0, fmt.Errorf("open ICMP socket: %w", err)
	}
	defer conn.Close()
	start := time.Now()
	if err := conn.SetDeadline(start.Add(timeout)); err != nil {
		return 0, err
	}
	id := uint16(os.Getpid())
	// The kernel fills the ICMPv6 checksum itself (it covers a pseudo-header).
	if _, err := conn.WriteTo(k.echoRequest(id, 1), &net.IPAddr{IP: ipOf(dst), Zone: dst.Zone()}); err != nil {
		return 0, fmt.Errorf("send echo to %s: %w", dst, err)
	}
	buf := make([]byte, 1500)
	for {
		n, from, err := conn.ReadFrom(buf)
		if err != nil {
			return 0, fmt.Errorf("no echo reply from %s: %w", dst, err)
		}
		if k.isEchoReply(buf[:n], id, 1) && from.(*net.IPAddr).IP.Equal(ipOf(dst)) {
			return time.Since(start), nil
		}
		if k.isUnreachableFor(buf[:n], id, 1) {
			return 0, fmt.Errorf("%s unreachable (reported by %s)", dst, from)
		}
	}
}

func (k icmpKind) echoRequest(id, seq uint16) []byte {
	b := []byte{k.request, 0, 0, 0, 0, 0, 0, 0, 'v', 'p', 'c', '-', 'c', 'n', 'i'}
	binary.BigEndian.PutUint16(b[4:], id)
	binary.BigEndian.PutUint16(b[6:], seq)
	binary.BigEndian.PutUint16(b[2:], icmpChecksum(b))
	return b
}

func (k icmpKind) isEchoReply(b []byte, id, seq uint16) bool {
	return len(b) >= 8 && b[0] == k.reply && b[1] == 0 &&
		binary.BigEndian.Uint16(b[4:]) == id && binary.BigEndian.Uint16(b[6:]) == seq
}

// isUnreachableFor reports an ICMP destination-unreachable quoting our echo.
func (k icmpKind) isUnreachableFor(b []byte, id, seq uint16) bool {
	if len(b) < 8+20 || b[0] != k.unreach {
		return false
	}
	quoted := b[8:]
	ihl := k.quotedHeader(quoted)
	if len(quoted) < ihl+8 {
		return false
	}
	echo := quoted[ihl:]
	return echo[0] == k.request && binary.BigEndian.Uint16(echo[4:]) == id && binary.BigEndian.Uint16(echo[6:]) == seq
}

func icmpChecksum(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}
