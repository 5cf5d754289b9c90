package netns

import (
	"os"
	"path/filepath"
)

// hostVethIPv6Sysctls are the reference's settings for the host veth: ignore
// router advertisements from the pod, accept redirects, do not act as a
// router on this link (forwarding itself is net.ipv6.conf.all.forwarding's).
// Beyond the reference, accept_dad=0: the host veth's link-local address is
// usable the moment the link is up, so the node can solicit the pod's
// address at once instead of after a second of DAD (the kernel sends no
// neighbour solicitation while its link-local address is tentative).
var hostVethIPv6Sysctls = map[string]string{
	"accept_ra":        "0",
	"accept_redirects": "1",
	"forwarding":       "0",
	"accept_dad":       "0",
}

// setHostVethSysctls applies hostVethIPv6Sysctls; best effort, since a node
// with IPv6 disabled has no such files and IPv4 pods do not need them.
// /proc/sys/net shows the calling thread's namespace.
func setHostVethSysctls(veth string) {
	dir := filepath.Join("/proc/sys/net/ipv6/conf", veth)
	for key, value := range hostVethIPv6Sysctls {
		_ = os.WriteFile(filepath.Join(dir, key), []byte(value), 0o644)
	}
}
