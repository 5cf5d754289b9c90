//go:build !amd64 && !arm64

package store

import (
	"bytes"
	"runtime"
	"strconv"
)

// goroutineID is the runtime's id of the calling goroutine, read from the
// first line of its stack ("goroutine 42 [running]:"); Go has no other way
// to tell a nested call from a concurrent one.
func goroutineID() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, _ := strconv.ParseUint(string(b), 10, 64)
	return id
}
