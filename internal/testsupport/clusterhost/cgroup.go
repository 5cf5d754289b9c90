package clusterhost

import (
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// Hierarchy is how the machine mounts its cgroups.
type Hierarchy int

const (
	// Unified: cgroup v2 at /sys/fs/cgroup, every controller in one tree.
	Unified Hierarchy = iota
	// Hybrid: cgroup v1, a tree per controller under /sys/fs/cgroup, and a
	// cgroup2 tree (at /sys/fs/cgroup/unified) that holds no controller.
	Hybrid
	// Legacy: cgroup v1 only.
	Legacy
)

func (h Hierarchy) String() string {
	return [...]string{"cgroup v2 (unified)", "cgroup v1 (hybrid)", "cgroup v1 (legacy)"}[h]
}

// V1Controllers are the v1 controllers the kubelet requires (the ones its
// cgroup existence check reads).
var V1Controllers = []string{"cpu", "cpuacct", "cpuset", "memory", "pids"}

// Cgroups is the machine's cgroup layout.
type Cgroups struct {
	Hierarchy Hierarchy
	// Mounts are the mount points of the cgroup trees: with Unified the one
	// tree, with v1 one per controller (several may share one) and, Hybrid,
	// the cgroup2 tree, in which runc makes each container's cgroup too.
	Mounts []string
}

// Detect reads /proc/self/mountinfo's text. It refuses a machine with no
// cgroup at /sys/fs/cgroup, or cgroup v1 without a controller the kubelet
// requires.
func Detect(mountinfo string) (Cgroups, error) {
	var v1, v2 []string
	controllers := map[string]bool{}
	for _, line := range strings.Split(mountinfo, "\n") {
		point, fstype, opts, ok := mountFields(line)
		if !ok {
			continue
		}
		switch {
		case fstype == "cgroup2" && point == "/sys/fs/cgroup":
			return Cgroups{Hierarchy: Unified, Mounts: []string{point}}, nil
		case fstype == "cgroup2" && filepath.Dir(point) == "/sys/fs/cgroup":
			v2 = append(v2, point)
		case fstype == "cgroup" && filepath.Dir(point) == "/sys/fs/cgroup":
			v1 = append(v1, point)
			for _, o := range strings.Split(opts, ",") {
				controllers[o] = true
			}
		}
	}
	if len(v1) == 0 {
		return Cgroups{}, fmt.Errorf("no cgroup hierarchy is mounted at /sys/fs/cgroup (neither cgroup2 nor v1 controllers): the kubelet needs one")
	}
	var lack []string
	for _, c := range V1Controllers {
		if !controllers[c] {
			lack = append(lack, c)
		}
	}
	if len(lack) > 0 {
		return Cgroups{}, fmt.Errorf("cgroup v1 without the %s controller (mounted: %s): the kubelet needs %s",
			strings.Join(lack, ", "), strings.Join(v1, " "), strings.Join(V1Controllers, ", "))
	}
	h := Legacy
	if len(v2) > 0 {
		h = Hybrid
	}
	all := append(v1, v2...)
	slices.Sort(all)
	return Cgroups{Hierarchy: h, Mounts: all}, nil
}

// mountFields are a mountinfo line's mount point, filesystem type and super
// options ("ID PARENT MAJ:MIN ROOT POINT OPTS [OPTIONAL...] - TYPE SOURCE SUPER").
func mountFields(line string) (point, fstype, super string, ok bool) {
	pre, post, found := strings.Cut(line, " - ")
	f, g := strings.Fields(pre), strings.Fields(post)
	if !found || len(f) < 5 || len(g) < 3 {
		return "", "", "", false
	}
	return f[4], g[0], g[2], true
}

// Dirs are the directories of the cgroup /name in every tree.
func (c Cgroups) Dirs(name string) []string {
	var out []string
	for _, m := range c.Mounts {
		out = append(out, filepath.Join(m, name))
	}
	return out
}

// NodeCgroup is the cgroup (in every tree) of one node of the cluster whose
// files are in clusterDir: named after the dir, so that two clusters on one
// machine never share one. A kubelet destroys the pod cgroups under its root
// that it does not know, and a teardown kills what runs in its nodes'
// cgroups: sharing, each would wreck the other's pods.
func NodeCgroup(clusterDir, node string) string {
	abs, err := filepath.Abs(clusterDir)
	if err != nil {
		abs = clusterDir
	}
	sum := sha256.Sum256([]byte(abs))
	return fmt.Sprintf("vpc-cni-cluster-%x-%s", sum[:4], node)
}
