package netns

import (
	"errors"
	"reflect"
	"runtime"
	"slices"
	"testing"

	"github.com/containernetworking/plugins/pkg/ns"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"vpc-cni/internal/testsupport/testenv"
)

// withoutSysAdmin runs fn on an OS thread of its own inside node, with
// CAP_SYS_ADMIN gone from the thread's capability sets: as the DaemonSet's
// long-running container runs. The thread is never unlocked, so the runtime
// ends it with the goroutine and no other code runs without the capability.
func withoutSysAdmin(t *testing.T, node ns.NetNS, fn func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := vnetns.Set(vnetnsOf(node)); err != nil {
			done <- err
			return
		}
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			done <- err
			return
		}
		bit := uint32(1) << (unix.CAP_SYS_ADMIN % 32)
		i := unix.CAP_SYS_ADMIN / 32
		data[i].Effective &^= bit
		data[i].Permitted &^= bit
		data[i].Inheritable &^= bit
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			done <- err
			return
		}
		done <- fn()
	}()
	return <-done
}

// What the reconcile loop does to pods (read the wiring, find a running
// pod's interface for a rebuild, tear down a gone pod's host side, as its gc
// does) works without CAP_SYS_ADMIN: nothing enters a pod's namespace.
func TestPrivilegedTheLoopsPodWorkNeedsNoSysAdmin(t *testing.T) {
	node := newNode(t)
	liveNS, live := newPod(t, "live", "100.64.1.21", 0)
	live.IfName = "net1" // not the default a rebuild falls back to
	goneNS, gone := newPod(t, "gone", "100.64.1.22", 3)
	wirePod(t, node, live)
	wirePod(t, node, gone)
	testenv.DeleteNetNS(goneNS)
	var found []PodWiring
	err := withoutSysAdmin(t, node, func() error {
		if err := vnetns.Set(vnetnsOf(liveNS)); !errors.Is(err, unix.EPERM) {
			t.Errorf("entering a pod's netns without CAP_SYS_ADMIN: %v, want EPERM (is the capability really gone?)", err)
			return err
		}
		var err error
		if found, err = DiscoverPods(); err != nil {
			return err
		}
		return TeardownPod(gone) // the gc's release of a pod whose netns is gone
	})
	if err != nil {
		t.Fatal(err)
	}
	want := PodWiring{HostVeth: live.HostVeth, IP: live.IP, Netns: live.NetnsPath, IfName: "net1"}
	if !slices.Contains(found, want) { // the gone pod's veth may linger until the kernel destroys its netns
		t.Errorf("discovered %+v, want %+v among them", found, want)
	}
	if st := listHost(t, node); !reflect.DeepEqual(st.Veths, []string{live.HostVeth}) {
		t.Errorf("after the gone pod's teardown the node has %+v, want only %s", st, live.HostVeth)
	}
}
