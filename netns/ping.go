package netns

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"
)

// Ping sends one ICMP echo to dst from the calling thread's network namespace
// and waits for the reply; it needs no ping binary (only CAP_NET_RAW). An
// ICMP unreachable quoting our echo fails at once.
func Ping(dst netip.Addr, timeout time.Duration) (time.Duration, error) {
	conn, err := net.ListenPacket("ip4:icmp", "0.0.0.0")
	if err != nil {
		return 0, fmt.Errorf("open ICMP socket: %w", err)
	}
	defer conn.Close()
	start := time.Now()
	if err := conn.SetDeadline(start.Add(timeout)); err != nil {
		return 0, err
	}
	id := uint16(os.Getpid())
	if _, err := conn.WriteTo(echoRequest(id, 1), &net.IPAddr{IP: ipOf(dst)}); err != nil {
		return 0, fmt.Errorf("send echo to %s: %w", dst, err)
	}
	buf := make([]byte, 1500)
	for {
		n, from, err := conn.ReadFrom(buf)
		if err != nil {
			return 0, fmt.Errorf("no echo reply from %s: %w", dst, err)
		}
		if isEchoReply(buf[:n], id, 1) && from.(*net.IPAddr).IP.Equal(ipOf(dst)) {
			return time.Since(start), nil
		}
		if isUnreachableFor(buf[:n], id, 1) {
			return 0, fmt.Errorf("%s unreachable (reported by %s)", dst, from)
		}
	}
}

func echoRequest(id, seq uint16) []byte {
	b := []byte{8, 0, 0, 0, 0, 0, 0, 0, 'v', 'p', 'c', '-', 'c', 'n', 'i'}
	binary.BigEndian.PutUint16(b[4:], id)
	binary.BigEndian.PutUint16(b[6:], seq)
	binary.BigEndian.PutUint16(b[2:], icmpChecksum(b))
	return b
}

func isEchoReply(b []byte, id, seq uint16) bool {
	return len(b) >= 8 && b[0] == 0 && b[1] == 0 &&
		binary.BigEndian.Uint16(b[4:]) == id && binary.BigEndian.Uint16(b[6:]) == seq
}

// isUnreachableFor reports an ICMP destination-unreachable quoting our echo.
func isUnreachableFor(b []byte, id, seq uint16) bool {
	if len(b) < 8+20 || b[0] != 3 {
		return false
	}
	quoted := b[8:]
	ihl := int(quoted[0]&0x0f) * 4
	if len(quoted) < ihl+8 {
		return false
	}
	echo := quoted[ihl:]
	return echo[0] == 8 && binary.BigEndian.Uint16(echo[4:]) == id && binary.BigEndian.Uint16(echo[6:]) == seq
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
