package store

import (
	"net/netip"
	"testing"
	"time"

	"vpc-cni/pool"
)

// FuzzDecodeAddr: a damaged address record is an error, never a panic, and a
// record that decodes encodes back to the same bytes.
func FuzzDecodeAddr(f *testing.F) {
	good, err := addrRecord{ENIID: "eni-1", Block: netip.MustParsePrefix("100.64.0.16/28"),
		State: pool.Assigned, Since: time.Unix(1764500000, 0), Owner: "c1/eth0"}.encode()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte{recordV1, 'f', 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeAddr(b)
		if err != nil {
			return
		}
		again, err := r.encode()
		if err != nil {
			t.Fatalf("decoded %+v from %x but cannot encode it: %v", r, b, err)
		}
		if back, err := decodeAddr(again); err != nil || back != r {
			t.Fatalf("round trip of %x: %+v -> %x -> %+v (%v)", b, r, again, back, err)
		}
	})
}
