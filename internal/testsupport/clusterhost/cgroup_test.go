package clusterhost

import (
	"slices"
	"strings"
	"testing"
)

// Mount tables as machines print them (/proc/self/mountinfo, trimmed).
const (
	unifiedMounts = `22 28 0:21 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
25 22 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
`
	// A machine whose agent sits in a memory cgroup of its own: the hybrid layout.
	hybridMounts = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
36 31 0:33 / /sys/fs/cgroup/devices rw,relatime - cgroup cgroup rw,devices
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`
	// systemd's legacy layout: cpu and cpuacct mounted together, no cgroup2.
	legacyMounts = `24 22 0:22 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:4 - tmpfs tmpfs ro,mode=755
27 24 0:25 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:9 - cgroup cgroup rw,cpu,cpuacct
28 24 0:26 / /sys/fs/cgroup/cpuset rw,nosuid,nodev,noexec,relatime shared:10 - cgroup cgroup rw,cpuset
29 24 0:27 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:11 - cgroup cgroup rw,memory
30 24 0:28 / /sys/fs/cgroup/pids rw,nosuid,nodev,noexec,relatime shared:12 - cgroup cgroup rw,pids
`
)

func TestDetectTellsTheHierarchies(t *testing.T) {
	for _, c := range []struct {
		name, mounts string
		want         Hierarchy
		dirs         []string
	}{
		{"v2", unifiedMounts, Unified, []string{"/sys/fs/cgroup/n1"}},
		{"hybrid", hybridMounts, Hybrid, []string{"/sys/fs/cgroup/cpu/n1", "/sys/fs/cgroup/cpuacct/n1",
			"/sys/fs/cgroup/cpuset/n1", "/sys/fs/cgroup/devices/n1", "/sys/fs/cgroup/memory/n1",
			"/sys/fs/cgroup/pids/n1", "/sys/fs/cgroup/systemd/n1", "/sys/fs/cgroup/unified/n1"}},
		{"legacy", legacyMounts, Legacy, []string{"/sys/fs/cgroup/cpu,cpuacct/n1", "/sys/fs/cgroup/cpuset/n1",
			"/sys/fs/cgroup/memory/n1", "/sys/fs/cgroup/pids/n1"}},
	} {
		got, err := Detect(c.mounts)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got.Hierarchy != c.want || !slices.Equal(got.Dirs("n1"), c.dirs) {
			t.Errorf("%s: %v %v, want %v %v", c.name, got.Hierarchy, got.Dirs("n1"), c.want, c.dirs)
		}
	}
}

func TestDetectRefusesWhatTheKubeletCannotUse(t *testing.T) {
	noCpuset := strings.ReplaceAll(hybridMounts, "rw,cpuset\n", "rw,net_cls\n")
	for _, c := range []struct{ name, mounts, want string }{
		{"no cgroup", "22 28 0:21 / /sys rw - sysfs sysfs rw\n", "no cgroup hierarchy is mounted at /sys/fs/cgroup"},
		{"v1 without cpuset", noCpuset, "cgroup v1 without the cpuset controller"},
		{"v2 elsewhere only", "41 31 0:38 / /mnt/cg rw - cgroup2 cgroup2 rw\n", "no cgroup hierarchy"},
	} {
		if _, err := Detect(c.mounts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

func TestMountFieldsSkipOptionalFields(t *testing.T) {
	point, fstype, super, ok := mountFields("27 24 0:25 / /sys/fs/cgroup/cpu,cpuacct rw shared:9 master:2 - cgroup cgroup rw,cpu,cpuacct")
	if !ok || point != "/sys/fs/cgroup/cpu,cpuacct" || fstype != "cgroup" || super != "rw,cpu,cpuacct" {
		t.Errorf("%q %q %q %v", point, fstype, super, ok)
	}
	if _, _, _, ok := mountFields("garbage"); ok {
		t.Error("a line without ' - ' parsed")
	}
}

func TestTwoClustersNeverShareANodeCgroup(t *testing.T) {
	a, b := NodeCgroup("/tmp/vpc-cni-cluster", "node1"), NodeCgroup("/tmp/vpc-cni-cluster-test-1234", "node1")
	if a == b {
		t.Errorf("two clusters' node1 share the cgroup %s", a)
	}
	if NodeCgroup("/tmp/vpc-cni-cluster", "node2") == a {
		t.Error("two nodes of one cluster share a cgroup")
	}
	// down finds what a dead up left: the same dir, however it is written, names the same cgroup.
	if again := NodeCgroup("/tmp/../tmp/vpc-cni-cluster/", "node1"); again != a {
		t.Errorf("%s, then %s", a, again)
	}
}
