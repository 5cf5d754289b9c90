package e2e

import (
	"strings"
	"testing"

	"vpc-cni/deploy"
)

// A reboot puts the node's sysctls back to the kernel's defaults, and the
// timer's passes may not write /proc/sys (ProtectKernelTunables): the boot
// unit's command, as the unit writes it, sets them again from the node the
// state knows, with no EC2 call.
func TestPrivilegedBootUnitSetsTheNodeSysctls(t *testing.T) {
	v := newVPCWorld(t)
	const rp = "net/ipv4/conf/eth0/rp_filter"
	writeSysctl(t, v.w.node, rp, "1") // as after a reboot
	args := bootSysctlsCommand(t)
	v.w.sim.DenyAction("DescribeNetworkInterfaces") // EC2 is not needed
	if r := v.w.vpcctl(nil, args...); r.err != nil || !strings.Contains(string(r.stdout), "set        "+rp+"=2") {
		t.Fatalf("%q: %v\n%s%s", args, r.err, r.stdout, r.stderr)
	}
	if got := readSysctl(t, v.w.node, rp); got != "2" {
		t.Fatalf("rp_filter of eth0 is %s after the boot unit's command; want 2", got)
	}
	if r := v.w.vpcctl(nil, args...); r.err != nil || !strings.Contains(string(r.stdout), "unchanged  the node's sysctls") {
		t.Fatalf("a second run: %v\n%s%s", r.err, r.stdout, r.stderr)
	}
}

// bootSysctlsCommand is the boot unit's node-rules command's arguments.
func bootSysctlsCommand(t *testing.T) []string {
	t.Helper()
	for _, line := range strings.Split(deploy.MaxPodsService, "\n") {
		c, ok := strings.CutPrefix(line, "ExecStartPre=-")
		if f := strings.Fields(c); ok && len(f) > 1 && f[1] == "node-rules" {
			return f[1:]
		}
	}
	t.Fatalf("the boot unit runs no node-rules command:\n%s", deploy.MaxPodsService)
	return nil
}
