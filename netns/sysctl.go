package netns

import (
	"os"
	"path/filepath"
)

// hostVethIPv6Sysctls are the reference's settings for the host veth: ignore
// router advertisements from the pod, accept redirects, do not forward IPv6.
var hostVethIPv6Sysctls = map[string]string{
	"accept_ra":        "0",
	"accept_redirects": "1",
	"forwarding":       "0",
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
