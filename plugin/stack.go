package plugin

import (
	"github.com/containernetworking/cni/pkg/skel"
)

// stackPad is what a verb's goroutine is given up front: a netlink read
// keeps a 64 KiB buffer on the stack (vishvananda/netlink's Receive), so
// every ADD and DEL ends with a 128 KiB stack.
const stackPad = 64 << 10

// grown makes each verb grow the goroutine's stack once, while it is
// shallow, to the size the verb reaches anyway. Grown step by step in the
// depths of the wiring, the stack is copied three times (16, 32, then
// 128 KiB), and every copy walks each frame's stack map in the binary's
// tables: a few hundred microseconds of page faults on every ADD and DEL
// of a process that lives for one call.
func grown(f skel.CNIFuncs) skel.CNIFuncs {
	wrap := func(verb func(*skel.CmdArgs) error) func(*skel.CmdArgs) error {
		if verb == nil {
			return nil
		}
		return func(args *skel.CmdArgs) error {
			growStack()
			return verb(args)
		}
	}
	return skel.CNIFuncs{Add: wrap(f.Add), Del: wrap(f.Del), Check: wrap(f.Check), GC: wrap(f.GC), Status: wrap(f.Status)}
}

// growStack's frame holds stackPad bytes, so calling it grows the stack to
// fit them in one copy. The pad is handed to touch so the compiler keeps it.
//
//go:noinline
func growStack() {
	var pad [stackPad]byte
	touch(&pad)
}

//go:noinline
func touch(pad *[stackPad]byte) { pad[0] = 1 }
