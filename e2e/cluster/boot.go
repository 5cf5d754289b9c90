//go:build cluster

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// bootUnit is the shipped boot unit: before the kubelet starts, a pass,
// then the kubelet drop-in with maxPods from the node's ENIs.
const bootUnit = "deploy/vpc-cni-max-pods.service"

// kubeletConfigDir is where the boot unit writes its drop-in; the kubelet
// reads it with --config-dir.
const kubeletConfigDir = "/etc/kubernetes/kubelet.conf.d"

// boot runs the boot unit's commands in the node as systemd would before
// the kubelet (the unit's vpcctl path replaced by the one built here). A
// failing ExecStartPre line marked '-' is logged, as systemd ignores it.
func (n *node) boot(c *cluster) error {
	unit, err := os.ReadFile(filepath.Join(c.repo, bootUnit))
	if err != nil {
		return err
	}
	for _, key := range []string{"ExecStartPre", "ExecStart"} {
		for _, line := range unitLines(unit, key) {
			ignore := strings.HasPrefix(line, "-")
			argv := strings.Fields(strings.TrimPrefix(line, "-"))
			if len(argv) == 0 || filepath.Base(argv[0]) != "vpcctl" {
				return fmt.Errorf("%s: %s=%s is not a vpcctl command", bootUnit, key, line)
			}
			argv[0] = c.tools.vpcctl
			out, err := n.execEnv(n.sim.Env(), argv...)
			c.step("%s boot: %s: %s", n.name, strings.Join(argv[1:], " "), bytes.TrimSpace(out))
			if err != nil && !ignore {
				return fmt.Errorf("%s %s: %v: %s", bootUnit, key, err, out)
			}
		}
	}
	return nil
}

// unitLines are the values of key= lines in a unit file.
func unitLines(unit []byte, key string) []string {
	var out []string
	s := bufio.NewScanner(bytes.NewReader(unit))
	for s.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(s.Text()), key+"="); ok {
			out = append(out, v)
		}
	}
	return out
}

// execEnv runs a command inside the node's namespaces with env added.
func (n *node) execEnv(env []string, argv ...string) ([]byte, error) {
	args := append([]string{"--target", strconv.Itoa(n.holder.pid), "--net", "--mount", "--"}, argv...)
	cmd := exec.Command("nsenter", args...)
	cmd.Env = append(os.Environ(), env...)
	return cmd.CombinedOutput()
}
