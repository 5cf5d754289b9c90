package e2e

import (
	"errors"
	"fmt"
	goruntime "runtime"

	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// vpcctlAsTheLoop runs the CLI as the DaemonSet's long-running container
// does: in the node netns, with CAP_NET_ADMIN the only capability left in its
// bounding set, so the process has no CAP_SYS_ADMIN. The bounding set is the
// calling thread's and a child inherits it, so the command starts from a
// thread of its own that is never unlocked: the runtime ends it with the
// goroutine, and no other test's process starts from it.
func (w *world) vpcctlAsTheLoop(env []string, args ...string) run {
	done := make(chan run, 1)
	go func() {
		goruntime.LockOSThread()
		if err := vnetns.Set(vnetns.NsHandle(w.node.Fd())); err != nil {
			done <- run{err: err}
			return
		}
		for c := 0; c <= unix.CAP_LAST_CAP; c++ {
			if c == unix.CAP_NET_ADMIN {
				continue
			}
			if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
				done <- run{err: fmt.Errorf("dropping capability %d from the bounding set: %w", c, err)}
				return
			}
		}
		if has, _ := unix.PrctlRetInt(unix.PR_CAPBSET_READ, unix.CAP_SYS_ADMIN, 0, 0, 0); has != 0 {
			done <- run{err: errors.New("CAP_SYS_ADMIN is still in the bounding set")}
			return
		}
		done <- execHere(bin("vpcctl"), env, nil, append([]string{"--state-dir", w.stateDir}, args...)...)
	}()
	return <-done
}
