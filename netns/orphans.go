package netns

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// orphans are the live veths with no host route through them whose other
// end is in a namespace no path names: neither an nsfs mount (a runtime's
// /var/run/netns/… bind mount, wherever it is) nor a process's
// /proc/<pid>/ns/net. DEL leaves a pod's pair to its namespace's deletion
// (DetachPod); a namespace something still holds (an open descriptor, a
// dying namespace the kernel has not cleaned up) keeps it, and nothing will
// use it again. A veth with a host route is a running pod's, and one into
// a named namespace may be ADDed again: neither is an orphan.
func orphans(h *netlink.Handle, veths []netlink.Link, routes []RouteInfo) []string {
	routed := map[string]bool{}
	for _, r := range routes {
		routed[r.Veth] = true
	}
	var cand []netlink.Link
	for _, l := range veths {
		if l.Attrs().NetNsID >= 0 && !routed[l.Attrs().Name] {
			cand = append(cand, l)
		}
	}
	if len(cand) == 0 {
		return nil
	}
	named := namedNetnsIDs(h)
	var out []string
	for _, l := range cand {
		if !named[l.Attrs().NetNsID] {
			out = append(out, l.Attrs().Name)
		}
	}
	return out
}

// namedNetnsIDs are the ids, in h's namespace, of every network namespace a
// path names. A path that cannot be read names nothing. That errs towards
// orphans, and is safe because of what an orphan is: no host route (not a
// running pod, even with the state lost) and, in gc, no assignment (not an
// ADD under way, which takes its address before it makes its veth), so at
// worst the pair of a pod already DELeted goes before its namespace does.
// The nsfs mounts of other mount namespaces are not seen: a sandbox whose
// namespace is mounted only there has its pause process in /proc.
func namedNetnsIDs(h *netlink.Handle) map[int]bool {
	ids := map[int]bool{}
	seen := map[[2]uint64]bool{}
	for _, path := range append(nsfsMounts(), procNetns()...) {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Fstat(fd, &st) == nil && !seen[[2]uint64{st.Dev, st.Ino}] {
			seen[[2]uint64{st.Dev, st.Ino}] = true
			if id, err := h.GetNetNsIdByFd(fd); err == nil && id >= 0 {
				ids[id] = true
			}
		}
		unix.Close(fd)
	}
	return ids
}

// nsfsMounts are the mount points of nsfs files in /proc/self/mountinfo
// (the fifth field; the file system type follows the " - " separator).
func nsfsMounts() []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields := strings.Fields(pre)
		if ok && strings.HasPrefix(post, "nsfs ") && len(fields) >= 5 {
			out = append(out, unescapeMount(fields[4]))
		}
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space ...).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, ok := octal(s[i+1 : i+4]); ok {
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func octal(s string) (byte, bool) {
	if len(s) != 3 {
		return 0, false
	}
	var v int
	for _, c := range s {
		if c < '0' || c > '7' {
			return 0, false
		}
		v = v*8 + int(c-'0')
	}
	return byte(v), v < 256
}

// procNetns are /proc/<pid>/ns/net of every process.
func procNetns() []string {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if n := e.Name(); n != "" && n[0] >= '1' && n[0] <= '9' {
			out = append(out, filepath.Join("/proc", n, "ns", "net"))
		}
	}
	return slices.Clip(out)
}
