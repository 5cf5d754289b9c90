package netns

import (
	"strings"

	"github.com/vishvananda/netlink"
)

// Sandbox names the runtime's attachment a pod's host veth was made for:
// the CNI network, the container ID and the pod interface. SetupPod writes
// it as the host veth's alias (IFLA_IFALIAS), so the kernel says whose a
// veth is when the state file and the runtime's cache do not (a rebuild
// that reads the node while an ADD is under way, before the runtime caches
// its result), and teardown by name never takes a newer sandbox's veth of
// the same pod (the name is the pod's, not the sandbox's).
type Sandbox struct {
	Network     string
	ContainerID string
	IfName      string
}

// aliasPrefix marks an alias as vpc-cni's: "vpc-cni/<network>/<container
// ID>/<interface>". **contract** (what the node's veths say to a rebuild by
// a later version)
const aliasPrefix = "vpc-cni/"

// maxAlias is the kernel's alias limit (IFALIASZ, 256, with the NUL).
const maxAlias = 255

// alias is s as a veth alias; "" when s is not complete or cannot be said
// in one (a part holding a '/', too long): that veth then has none, as a
// veth an older version or the reference made.
func (s Sandbox) alias() string {
	parts := []string{s.Network, s.ContainerID, s.IfName}
	for _, p := range parts {
		if p == "" || strings.ContainsAny(p, "/\x00") {
			return ""
		}
	}
	a := aliasPrefix + strings.Join(parts, "/")
	if len(a) > maxAlias {
		return ""
	}
	return a
}

// SandboxOf reads a veth alias; false when it is not vpc-cni's.
func SandboxOf(alias string) (Sandbox, bool) {
	rest, ok := strings.CutPrefix(alias, aliasPrefix)
	if !ok {
		return Sandbox{}, false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return Sandbox{}, false
	}
	return Sandbox{Network: parts[0], ContainerID: parts[1], IfName: parts[2]}, true
}

// owns reports whether the veth l (in h's namespace) is p's sandbox's: its
// alias names p.Sandbox, or, when it has no alias of ours (made by an older
// version or the reference), its other end is in p.NetnsPath, or, p's
// namespace gone, in a namespace no path names (an orphan: something holds
// the namespace p's runtime deleted). A veth that names another sandbox, or
// leads into another living namespace, is not.
func (p Pod) owns(h *netlink.Handle, l netlink.Link) bool {
	if _, veth := l.(*netlink.Veth); !veth {
		return false
	}
	if s, ok := SandboxOf(l.Attrs().Alias); ok {
		return s == p.Sandbox
	}
	id := l.Attrs().NetNsID
	switch {
	case id < 0:
		return false
	case NetnsExists(p.NetnsPath):
		return netnsID(h, p.NetnsPath) == id
	}
	return !namedNetnsIDs(h)[id]
}
