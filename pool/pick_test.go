package pool

import (
	"net/netip"
	"testing"
	"time"
)

func addr(ip string, st State, since time.Time) Addr {
	return Addr{IP: netip.MustParseAddr(ip), State: st, Since: since}
}

func block(cidr string, releasing bool, addrs ...Addr) Block {
	return Block{CIDR: netip.MustParsePrefix(cidr), Releasing: releasing, Addrs: addrs}
}

func TestPickAddress(t *testing.T) {
	now := startTime
	cool := 30 * time.Second
	justFreed, longAgo := now.Add(-time.Second), now.Add(-time.Minute)
	cases := []struct {
		name   string
		enis   []ENI
		want   [3]int
		wantOK bool
		wantIP string
	}{
		{"no ENIs", nil, [3]int{}, false, ""},
		{"lowest address of the lowest block", []ENI{{DeviceIndex: 0, Ready: true, Blocks: []Block{
			block("100.64.0.1/32", false, addr("100.64.0.1", Assigned, longAgo)),
			block("100.64.0.16/28", false,
				addr("100.64.0.16", Assigned, longAgo), addr("100.64.0.17", Free, longAgo), addr("100.64.0.18", Free, longAgo)),
		}}}, [3]int{0, 1, 1}, true, "100.64.0.17"},
		{"lowest device index first, whatever the slice order", []ENI{
			{DeviceIndex: 2, Ready: true, Blocks: []Block{block("100.64.0.2/32", false, addr("100.64.0.2", Free, longAgo))}},
			{DeviceIndex: 1, Ready: true, Blocks: []Block{block("100.64.0.9/32", false, addr("100.64.0.9", Free, longAgo))}},
		}, [3]int{1, 0, 0}, true, "100.64.0.9"},
		{"an ENI not ready is skipped", []ENI{
			{DeviceIndex: 0, Ready: false, Blocks: []Block{block("100.64.0.1/32", false, addr("100.64.0.1", Free, longAgo))}},
			{DeviceIndex: 1, Ready: true, Blocks: []Block{block("100.64.0.2/32", false, addr("100.64.0.2", Free, longAgo))}},
		}, [3]int{1, 0, 0}, true, "100.64.0.2"},
		{"still cooling is skipped, cooled down is taken", []ENI{{DeviceIndex: 0, Ready: true, Blocks: []Block{
			block("100.64.0.1/32", false, addr("100.64.0.1", Cooling, justFreed)),
			block("100.64.0.2/32", false, addr("100.64.0.2", Cooling, longAgo)),
		}}}, [3]int{0, 1, 0}, true, "100.64.0.2"},
		{"a releasing block is skipped", []ENI{{DeviceIndex: 0, Ready: true, Blocks: []Block{
			block("100.64.0.1/32", true, addr("100.64.0.1", Free, longAgo)),
			block("100.64.0.2/32", false, addr("100.64.0.2", Free, longAgo)),
		}}}, [3]int{0, 1, 0}, true, "100.64.0.2"},
		{"nothing usable", []ENI{{DeviceIndex: 0, Ready: true, Blocks: []Block{
			block("100.64.0.1/32", false, addr("100.64.0.1", Assigned, longAgo)),
			block("100.64.0.2/32", false, addr("100.64.0.2", Cooling, justFreed)),
			block("100.64.0.3/32", true, addr("100.64.0.3", Free, longAgo)),
			block("100.64.0.4/32", false, addr("100.64.0.4", Releasing, longAgo)),
		}}}, [3]int{}, false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := Snapshot{ENIs: tc.enis}
			e, b, a, ok := PickAddress(s, now, cool)
			if ok != tc.wantOK || [3]int{e, b, a} != tc.want {
				t.Fatalf("got %d/%d/%d %v; want %v %v", e, b, a, ok, tc.want, tc.wantOK)
			}
			if ok && s.ENIs[e].Blocks[b].Addrs[a].IP.String() != tc.wantIP {
				t.Fatalf("picked %s; want %s", s.ENIs[e].Blocks[b].Addrs[a].IP, tc.wantIP)
			}
		})
	}
}
