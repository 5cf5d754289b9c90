package npa

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
)

// contentType is gRPC's; proto is its default codec.
const contentType = "application/grpc"

// maxMessage bounds a message read: the replies are a few bytes.
const maxMessage = 1 << 16

// gRPC status codes used here.
const (
	codeOK            = 0
	codeUnknown       = 2
	codeInvalidArg    = 3
	codeUnimplemented = 12
	codeUnavailable   = 14
)

// frame is one length-prefixed message: a byte saying "not compressed",
// the length big-endian, the message.
func frame(msg []byte) []byte {
	b := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(b[1:], uint32(len(msg)))
	return append(b, msg...)
}

// readMessage reads the one message of a unary call's body; an empty body
// is an empty message.
func readMessage(r io.Reader) ([]byte, error) {
	var head [5]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading a message: %w", err)
	}
	if head[0] != 0 {
		return nil, errors.New("a compressed message (none was offered)")
	}
	n := binary.BigEndian.Uint32(head[1:])
	if n > maxMessage {
		return nil, fmt.Errorf("a message of %d bytes (at most %d)", n, maxMessage)
	}
	msg := make([]byte, n)
	if _, err := io.ReadFull(r, msg); err != nil {
		return nil, fmt.Errorf("reading a message: %w", err)
	}
	return msg, nil
}

// encodeMessage percent-encodes grpc-message as the gRPC spec says: bytes
// outside printable ASCII, and '%'.
func encodeMessage(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || c == '%' {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// decodeMessage undoes encodeMessage (a bad escape is kept as it is).
func decodeMessage(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			var c byte
			if _, err := fmt.Sscanf(s[i+1:i+3], "%02X", &c); err == nil {
				b.WriteByte(c)
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
