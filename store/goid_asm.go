//go:build amd64 || arm64

package store

// getg is the address of the calling goroutine's runtime descriptor, which
// the runtime keeps in a register (arm64) or thread-local storage (amd64).
func getg() uintptr

// goroutineID identifies the calling goroutine while it runs: its
// descriptor, reused only once the goroutine has ended (and so has left
// every transaction it entered). Reading the id the runtime prints would
// walk every frame of the stack through the binary's line tables, page
// faults on each transaction of a process that lives for one call.
func goroutineID() uint64 { return uint64(getg()) }
