package npa

import (
	"encoding/binary"
	"errors"
)

// The protobuf wire, as far as rpc/rpc.proto's messages need it: written
// here with encoding/binary's varints rather than linking the protobuf
// module, whose initialisers run at every start of the plugin (one of them
// reads the binary itself).

// Wire types of the fields these messages carry or may skip.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

var errTruncated = errors.New("truncated field")

func appendTag(b []byte, num, typ int) []byte {
	return binary.AppendUvarint(b, uint64(num)<<3|uint64(typ))
}

// appendString appends a proto3 string field (omitted when empty).
func appendString(b []byte, num int, s string) []byte {
	if s == "" {
		return b
	}
	b = appendTag(b, num, wireBytes)
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendVarint appends a varint field.
func appendVarint(b []byte, num int, v uint64) []byte {
	return binary.AppendUvarint(appendTag(b, num, wireVarint), v)
}

// consumeVarint reads a varint and its length; n <= 0 when b does not
// hold one.
func consumeVarint(b []byte) (v uint64, n int) { return binary.Uvarint(b) }

// consumeTag reads a field's number and wire type.
func consumeTag(b []byte) (num, typ, n int, err error) {
	v, n := consumeVarint(b)
	if n <= 0 || v>>3 == 0 || v>>3 > 1<<29-1 {
		return 0, 0, 0, errors.New("bad field tag")
	}
	return int(v >> 3), int(v & 7), n, nil
}

// fieldLen is the length of the value of a field of wire type typ at the
// start of b (groups, which proto3 never writes, are refused).
func fieldLen(typ int, b []byte) (int, error) {
	switch typ {
	case wireVarint:
		if _, n := consumeVarint(b); n > 0 {
			return n, nil
		}
	case wireFixed64:
		if len(b) >= 8 {
			return 8, nil
		}
	case wireFixed32:
		if len(b) >= 4 {
			return 4, nil
		}
	case wireBytes:
		if l, n := consumeVarint(b); n > 0 && l <= uint64(len(b)-n) {
			return n + int(l), nil
		}
	default:
		return 0, errors.New("unsupported wire type")
	}
	return 0, errTruncated
}
