package rebuild

import (
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"vpc-cni/netns"
)

// CacheEntry is the part of libcni's result cache (<cache dir>/results/
// <network>-<container ID>-<interface>) that names a pod's interface: what
// containerd and CRI-O keep so they can DEL after a restart.
type CacheEntry struct {
	ContainerID string      `json:"containerId"`
	IfName      string      `json:"ifName"`
	NetworkName string      `json:"networkName"`
	Netns       string      `json:"netns"`
	CniArgs     [][2]string `json:"cniArgs"`
	Result      struct {
		IPs []struct {
			Address string `json:"address"`
		} `json:"ips"`
	} `json:"result"`
	written time.Time // the file's mtime: a newer sandbox's entry wins over a stale one
}

func (c CacheEntry) arg(name string) string {
	for _, kv := range c.CniArgs {
		if kv[0] == name {
			return kv[1]
		}
	}
	return ""
}

func (c CacheEntry) hasIP(ip netip.Addr) bool {
	for _, a := range c.Result.IPs {
		if p, err := netip.ParsePrefix(a.Address); err == nil && p.Addr() == ip {
			return true
		}
	}
	return false
}

// ReadCNICache reads every entry of dir it can parse; a missing dir is none.
func ReadCNICache(dir string) []CacheEntry {
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	var out []CacheEntry
	for _, f := range files {
		raw, err := os.ReadFile(f)
		var c CacheEntry
		if err == nil && json.Unmarshal(raw, &c) == nil && c.ContainerID != "" && c.IfName != "" {
			if info, err := os.Stat(f); err == nil {
				c.written = info.ModTime()
			}
			out = append(out, c)
		}
	}
	return out
}

// MatchCache finds the entry of w: its address in the result, and its
// namespace and interface when the entry records them. When several match
// (a sandbox of the same pod whose DEL never came left its entry), the
// newest is the running one.
func MatchCache(cache []CacheEntry, w netns.PodWiring) (CacheEntry, bool) {
	ip := w.IP
	if !ip.IsValid() {
		ip = w.IP6 // an IPv6-only pod
	}
	var best CacheEntry
	found := false
	for _, c := range cache {
		if !c.hasIP(ip) || (w.Sandbox.ContainerID != "" && c.ContainerID != w.Sandbox.ContainerID) {
			continue // a veth that names its sandbox (netns.Sandbox) matches only that one's entry
		}
		if (c.Netns == "" || w.Netns == "" || c.Netns == w.Netns) && (w.IfName == "" || c.IfName == w.IfName) {
			if !found || c.written.After(best.written) {
				best, found = c, true
			}
		}
	}
	return best, found
}
