package npa

import (
	"bytes"
	"encoding/hex"
	"testing"
)

// The encodings of rpc/rpc.proto's messages, byte for byte as protoc's Go
// code writes them (fields in number order, proto3 zero values left out).
func TestMessagesEncodeAsTheReferenceProto(t *testing.T) {
	cases := []struct {
		name string
		got  []byte
		want string
	}{
		{"EnforceNpRequest", EnforceRequest{PodName: "a", PodNamespace: "ns", Mode: "strict", InterfaceCount: 1}.marshal(),
			"0a01611202" + hex.EncodeToString([]byte("ns")) + "1a06" + hex.EncodeToString([]byte("strict")) + "2001"},
		{"DeleteNpRequest", DeleteRequest{PodName: "a", PodNamespace: "ns"}.marshal(), "0a01611202" + hex.EncodeToString([]byte("ns"))},
		{"NetworkPolicyAgentConfigReply", ConfigReply{Mode: "standard", NodeIPv4: "1.2.3.4", InstanceID: "i-1", Region: "r"}.marshal(),
			"0a08" + hex.EncodeToString([]byte("standard")) + "1a07" + hex.EncodeToString([]byte("1.2.3.4")) + "2a03" +
				hex.EncodeToString([]byte("i-1")) + "3201" + hex.EncodeToString([]byte("r"))},
		{"MultiNICEnabled", ConfigReply{MultiNICEnabled: true}.marshal(), "1001"},
	}
	for _, c := range cases {
		if hex.EncodeToString(c.got) != c.want {
			t.Errorf("%s: %x, want %s", c.name, c.got, c.want)
		}
	}
}

// Success is field 1; an empty reply is false; fields a newer agent adds
// are skipped; a truncated reply or a group (never in proto3) is an error.
func TestSuccessReadsField1(t *testing.T) {
	for in, want := range map[string]bool{"": false, "0801": true, "0800": false, "12026869" + "0801": true, "0801" + "1801": true,
		"0d01020304" + "0801": true, "190102030405060708" + "0800": false} {
		b, _ := hex.DecodeString(in)
		if got, err := success(b); err != nil || got != want {
			t.Errorf("%q: %v %v, want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"08", "1205616263", "0d0102", "0b0801"} { // truncated varint, bytes, fixed32; a group
		b, _ := hex.DecodeString(bad)
		if _, err := success(b); err == nil {
			t.Errorf("%s decoded", bad)
		}
	}
}

// A frame is a flag byte, a big-endian length and the message; a
// compressed or oversized one is refused.
func TestFramesRoundTrip(t *testing.T) {
	msg := []byte("hello")
	got, err := readMessage(bytes.NewReader(frame(msg)))
	if err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("%q %v", got, err)
	}
	if got, err := readMessage(bytes.NewReader(nil)); err != nil || got != nil {
		t.Fatalf("empty body: %q %v", got, err)
	}
	for _, bad := range [][]byte{{1, 0, 0, 0, 0}, {0, 0xff, 0, 0, 0}, {0, 0, 0, 0, 9, 'x'}} {
		if _, err := readMessage(bytes.NewReader(bad)); err == nil {
			t.Errorf("%x read", bad)
		}
	}
}

func TestGRPCMessageEscapes(t *testing.T) {
	s := "50% done\nnext é"
	if e := encodeMessage(s); e != "50%25 done%0Anext %C3%A9" || decodeMessage(e) != s {
		t.Fatalf("%q -> %q -> %q", s, e, decodeMessage(e))
	}
}
