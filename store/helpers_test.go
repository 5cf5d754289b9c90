package store

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"testing"
	"time"

	"vpc-cni/pool"
)

var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

func newStore(t testing.TB) *Store {
	t.Helper()
	s, err := OpenNew(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func update(t testing.TB, s *Store, fn func(*Tx) error) {
	t.Helper()
	if err := s.Update(fn); err != nil {
		t.Fatal(err)
	}
}

func view(t testing.TB, s *Store, fn func(*Tx) error) {
	t.Helper()
	if err := s.View(fn); err != nil {
		t.Fatal(err)
	}
}

// secondaries makes one /32 block per address, each Free.
func secondaries(ips ...string) []pool.Block {
	var out []pool.Block
	for _, s := range ips {
		ip := netip.MustParseAddr(s)
		out = append(out, pool.Block{CIDR: netip.PrefixFrom(ip, 32), Addrs: []pool.Addr{{IP: ip, State: pool.Free}}})
	}
	return out
}

// prefixBlock makes a /28 whose 16 addresses are Free.
func prefixBlock(cidr string) pool.Block {
	p := netip.MustParsePrefix(cidr)
	b := pool.Block{CIDR: p}
	for ip := p.Addr(); p.Contains(ip); ip = ip.Next() {
		b.Addrs = append(b.Addrs, pool.Addr{IP: ip, State: pool.Free})
	}
	return b
}

// seqBlocks makes n /32 blocks from start on.
func seqBlocks(start string, n int) []pool.Block {
	var ips []string
	ip := netip.MustParseAddr(start)
	for range n {
		ips = append(ips, ip.String())
		ip = ip.Next()
	}
	return secondaries(ips...)
}

func testENI(dev int, ready bool, blocks ...pool.Block) pool.ENI {
	return pool.ENI{
		ID: fmt.Sprintf("eni-%04d", dev), DeviceIndex: dev, MAC: fmt.Sprintf("0a:00:00:00:00:%02x", dev),
		PrimaryIP: netip.AddrFrom4([4]byte{100, 64, 200, byte(dev)}),
		SubnetID:  "subnet-1", SubnetCIDR: netip.MustParsePrefix("100.64.0.0/16"),
		Ready: ready, CreatedAt: t0, Blocks: blocks,
	}
}

func fileSHA(t testing.TB, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// normTime drops location and monotonic reading so values compare equal.
func normTime(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return time.Unix(0, t.UnixNano()).UTC()
}

func normENI(e pool.ENI) pool.ENI {
	e.CreatedAt = normTime(e.CreatedAt)
	blocks := make([]pool.Block, len(e.Blocks))
	for i, b := range e.Blocks {
		b.Addrs = append([]pool.Addr{}, b.Addrs...)
		for j := range b.Addrs {
			b.Addrs[j].Since = normTime(b.Addrs[j].Since)
		}
		blocks[i] = b
	}
	if len(blocks) == 0 {
		blocks = nil
	}
	e.Blocks = blocks
	return e
}

func mustTake(t testing.TB, tx *Tx, key string, now time.Time, cooldown time.Duration) Assignment {
	t.Helper()
	a, err := tx.Take(Assignment{Key: key}, now, pool.Config{Cooldown: cooldown})
	if err != nil {
		t.Fatalf("Take(%s): %v", key, err)
	}
	return a
}

// refPick is the policy's choice (pool.PickPodAddress) over a snapshot;
// Take must make the same one without reading the snapshot.
func refPick(s pool.Snapshot, now time.Time, c pool.Config) (string, netip.Addr, bool) {
	e, b, a, ok := pool.PickPodAddress(s, now, c)
	if !ok {
		return "", netip.Addr{}, false
	}
	return s.ENIs[e].ID, s.ENIs[e].Blocks[b].Addrs[a].IP, true
}
