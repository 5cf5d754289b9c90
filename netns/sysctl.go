package netns

import (
	"path/filepath"

	"golang.org/x/sys/unix"
)

// sysctl is one /proc/sys setting of a link.
type sysctl struct{ key, value string }

// hostVethIPv6Sysctls are the reference's settings for the host veth: ignore
// router advertisements from the pod, accept redirects, do not act as a
// router on this link (forwarding itself is net.ipv6.conf.all.forwarding's).
// Beyond the reference, accept_dad=0: the host veth's link-local address is
// usable the moment the link is up, so the node can solicit the pod's
// address at once instead of after a second of DAD (the kernel sends no
// neighbour solicitation while its link-local address is tentative). An
// array, laid out by the linker: a map would be built at every start of the
// binary.
var hostVethIPv6Sysctls = [...]sysctl{
	{"accept_ra", "0"},
	{"accept_redirects", "1"},
	{"forwarding", "0"},
	{"accept_dad", "0"},
}

// setHostVethSysctls applies hostVethIPv6Sysctls; best effort, since a node
// with IPv6 disabled has no such files and IPv4 pods do not need them.
// /proc/sys/net shows the calling thread's namespace.
func setHostVethSysctls(veth string) {
	dir := filepath.Join("/proc/sys/net/ipv6/conf", veth)
	for _, s := range hostVethIPv6Sysctls {
		writeSysctl(filepath.Join(dir, s.key), s.value)
	}
}

// writeSysctl is open, write and close, no more: os.WriteFile also hands
// the file to the runtime's poller and takes it back (four more system
// calls per setting, on every ADD).
func writeSysctl(path, value string) {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	_, _ = unix.Write(fd, []byte(value))
	_ = unix.Close(fd)
}
