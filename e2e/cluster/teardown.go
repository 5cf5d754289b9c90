//go:build cluster

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"vpc-cni/internal/testsupport/clusterhost"
)

// teardown ends what up started, newest first: the kubelets, every
// container (through containerd), containerd, whatever still runs in a
// node's mount namespace or cgroup, the control plane, the emulators and
// the namespaces; then the node cgroups.
func (c *cluster) teardown() {
	c.step("tearing down")
	for _, n := range c.nodes {
		if n.kubelet != nil {
			n.kubelet.stop(10 * time.Second)
		}
		if n.ctrd != nil && !n.ctrd.exited() {
			n.killContainers(c)
		}
	}
	c.procs.stopAll()
	for _, n := range c.nodes {
		if n.holder != nil {
			killNamespace(n.holder.pid)
		}
		killCgroup(c.cgroups.Dirs(n.cgroupRoot()))
		if n.sim != nil {
			_ = n.sim.Close()
		}
	}
	if c.proxy != nil {
		_ = c.proxy.Close()
	}
	for _, h := range c.holders {
		h.kill()
	}
	for _, n := range c.nodes {
		removeCgroup(c.cgroups.Dirs(n.cgroupRoot()))
	}
	_ = os.Remove(filepath.Join(c.dir, "ready"))
	_ = os.Remove(filepath.Join(c.dir, "up.pid"))
	c.step("down")
}

// killContainers stops every task in the node's containerd (pods' processes).
func (n *node) killContainers(c *cluster) {
	sock := "/run/containerd/containerd.sock"
	out, _ := n.exec(c.ctr(), "--address", sock, "-n", "k8s.io", "tasks", "ls", "-q")
	for _, id := range strings.Fields(string(out)) {
		_, _ = n.exec(c.ctr(), "--address", sock, "-n", "k8s.io", "tasks", "kill", "-a", "-s", "SIGKILL", id)
	}
}

// killNamespace kills every process in the holder's mount namespace but the
// holder (containerd's shims).
func killNamespace(holder int) {
	want, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", holder))
	if err != nil {
		return
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == holder {
			continue
		}
		if got, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", pid)); err == nil && got == want {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// down stops a running `up` (SIGTERM: it tears down itself), then ends
// anything a dead `up` left (its pids file, the node cgroups) and removes DIR.
func down(dir string) error {
	if b, err := os.ReadFile(filepath.Join(dir, "up.pid")); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && syscall.Kill(pid, syscall.SIGTERM) == nil {
			for i := 0; i < 120 && syscall.Kill(pid, 0) == nil; i++ {
				time.Sleep(500 * time.Millisecond)
			}
		}
	}
	for _, f := range []string{"pids", "holders"} {
		killListed(filepath.Join(dir, f))
	}
	cg, _ := hostCgroups()
	for i := 1; i <= 2; i++ {
		dirs := cg.Dirs(clusterhost.NodeCgroup(dir, fmt.Sprintf("node%d", i)))
		killCgroup(dirs)
		removeCgroup(dirs)
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	fmt.Println("cluster down; removed", dir)
	return nil
}

// killListed kills the process groups of the pids listed in file.
func killListed(file string) {
	if b, err := os.ReadFile(file); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) > 0 {
				if pid, err := strconv.Atoi(f[0]); err == nil && syscall.Kill(pid, 0) == nil {
					_ = syscall.Kill(-pid, syscall.SIGKILL)
				}
			}
		}
	}
}
