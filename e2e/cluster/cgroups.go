//go:build cluster

package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"vpc-cni/internal/testsupport/clusterhost"
)

// hostCgroups is the machine's cgroup layout, read from its mount table; an
// error says why no kubelet can run here.
func hostCgroups() (clusterhost.Cgroups, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return clusterhost.Cgroups{}, err
	}
	cg, err := clusterhost.Detect(string(b))
	if err != nil {
		return cg, fmt.Errorf("this machine cannot run the cluster's kubelets: %w", err)
	}
	return cg, nil
}

// cgroupRoot is the node's own cgroup in every tree; down removes it.
func (n *node) cgroupRoot() string { return clusterhost.NodeCgroup(filepath.Dir(n.dir), n.name) }

func makeCgroups(dirs []string) error {
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// killCgroup kills every process in the node's cgroups (the pods').
func killCgroup(dirs []string) {
	for range 3 {
		any := false
		for _, d := range dirs {
			_ = filepath.Walk(d, func(p string, fi os.FileInfo, err error) error {
				if err != nil || fi.IsDir() || fi.Name() != "cgroup.procs" {
					return nil
				}
				b, _ := os.ReadFile(p)
				for _, f := range bytes.Fields(b) {
					if pid, err := strconv.Atoi(string(f)); err == nil {
						any = true
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
				}
				return nil
			})
		}
		if !any {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// removeCgroup removes the node's cgroup dirs, deepest first.
func removeCgroup(dirs []string) {
	for _, d := range dirs {
		var all []string
		_ = filepath.Walk(d, func(p string, fi os.FileInfo, err error) error {
			if err == nil && fi.IsDir() {
				all = append(all, p)
			}
			return nil
		})
		for i := len(all) - 1; i >= 0; i-- {
			_ = syscall.Rmdir(all[i])
		}
	}
}
