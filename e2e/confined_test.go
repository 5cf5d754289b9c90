package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/google/nftables"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"vpc-cni/hostnet"
)

// confinedScript gives a process the sandbox the chart's long-running
// container has: /proc/sys read-only (as containerd mounts it for a
// container that is not privileged), CAP_NET_ADMIN alone and no new
// privileges. It runs in a mount namespace of its own.
const confinedScript = `mount --make-rprivate / && mount --bind /proc/sys /proc/sys && mount -o remount,bind,ro /proc/sys &&
exec setpriv --no-new-privs --bounding-set -all,+net_admin --inh-caps -all "$@"`

// vpcctlConfined runs the CLI in the node netns inside confinedScript's sandbox.
func (w *world) vpcctlConfined(env []string, args ...string) run {
	var r run
	argv := append([]string{"--mount", "--", "sh", "-c", confinedScript, "sh", bin("vpcctl"), "--state-dir", w.stateDir}, args...)
	err := w.node.Do(func(ns.NetNS) error {
		r = execHere("unshare", env, nil, argv...)
		return nil
	})
	if err != nil {
		r.err = err
	}
	return r
}

func writeSysctl(t *testing.T, n ns.NetNS, key, val string) {
	t.Helper()
	err := n.Do(func(ns.NetNS) error { return os.WriteFile(filepath.Join("/proc/sys", key), []byte(val), 0o644) })
	if err != nil {
		t.Fatal(err)
	}
}

// A pass in the DaemonSet's sandbox cannot write /proc/sys. Another program
// flushes the node's nftables table and its ENIs' route tables and tightens
// rp_filter: the confined pass puts the tables back, keeps going, and names the sysctl it could not set
// (doctor too); a pass as root on the node (vpcctl install) sets it.
func TestPrivilegedAConfinedPassRepairsWhatItMayAndNamesTheSysctlItCannot(t *testing.T) {
	env := []string{"WARM_IP_TARGET=8"} // more than the primary ENI holds: a secondary ENI with a table
	v := newVPCWorld(t, env...)
	const rp = "net/ipv4/conf/eth0/rp_filter"
	if got := readSysctl(t, v.w.node, rp); got != "2" {
		t.Fatalf("after the first passes rp_filter of eth0 is %s; want 2", got)
	}
	writeSysctl(t, v.w.node, rp, "1")
	v.w.inNode(func() error {
		c, err := nftables.New()
		if err != nil {
			return err
		}
		c.DelTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: hostnet.TableName})
		return c.Flush()
	})
	tables := eniTables(t, v.w)
	if len(tables) == 0 {
		t.Fatal("no secondary ENI's route table to flush")
	}
	v.w.inNode(func() error { return flushTables(tables) })

	r := v.w.vpcctlConfined(env, "reconcile", "--wait", "--timeout", "1m", "-o", "json")
	var rep struct {
		Findings []struct{ Kind, Message string } `json:"findings"`
		Failed   []string                         `json:"failed"`
	}
	if err := json.Unmarshal(r.stdout, &rep); err != nil || r.err != nil || len(rep.Failed) > 0 {
		t.Fatalf("confined reconcile: %v, %v, failed %v\n%s%s", r.err, err, rep.Failed, r.stdout, r.stderr)
	}
	if !hasFinding(rep.Findings, "sysctl-read-only", rp+" is 1, want 2") {
		t.Fatalf("findings %+v; want sysctl-read-only naming %s", rep.Findings, rp)
	}
	if got := v.ourChains(); len(got) == 0 {
		t.Fatal("the confined pass did not put the flushed table back")
	}
	for _, table := range tables {
		if !hasDefaultRoute(t, v.w, table) {
			t.Errorf("the confined pass left ENI table %d flushed", table)
		}
	}
	if got := readSysctl(t, v.w.node, rp); got != "1" {
		t.Fatalf("rp_filter is %s after a pass that cannot write /proc/sys; the sandbox is not read-only", got)
	}
	if code := v.rulesStatus(env); code != 1 {
		t.Fatalf("node-rules status exited %d with rp_filter strict; want 1", code)
	}
	if v.doctorSaysRulesInPlace(t, env) {
		t.Fatal("doctor says the node rules are in place with rp_filter strict")
	}

	v.w.reconcile(env...) // as root on the node, as vpcctl install runs
	if got := readSysctl(t, v.w.node, rp); got != "2" {
		t.Fatalf("rp_filter of eth0 is %s after an unconfined pass; want 2", got)
	}
	if code := v.rulesStatus(env); code != 0 {
		t.Fatalf("node-rules status exited %d after the unconfined pass; want 0", code)
	}
}

// eniTables are the route tables of the node's secondary ENIs, from their
// rules (from <ENI primary IP> lookup T, priority 32765).
func eniTables(t *testing.T, w *world) []int {
	t.Helper()
	var out []int
	w.inNode(func() error {
		rules, err := netlink.RuleList(netlink.FAMILY_V4)
		for _, r := range rules {
			if r.Priority == 32765 && r.Table > 0 && r.Table != unix.RT_TABLE_MAIN && !slices.Contains(out, r.Table) {
				out = append(out, r.Table)
			}
		}
		return err
	})
	return out
}

func flushTables(tables []int) error {
	for _, table := range tables {
		routes, err := netlink.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: table}, netlink.RT_FILTER_TABLE)
		if err != nil {
			return err
		}
		for _, r := range routes {
			if err := netlink.RouteDel(&r); err != nil {
				return err
			}
		}
	}
	return nil
}

func hasDefaultRoute(t *testing.T, w *world, table int) bool {
	t.Helper()
	found := false
	w.inNode(func() error {
		routes, err := netlink.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: table}, netlink.RT_FILTER_TABLE)
		for _, r := range routes {
			found = found || r.Dst == nil || r.Dst.String() == "0.0.0.0/0"
		}
		return err
	})
	return found
}

func hasFinding(fs []struct{ Kind, Message string }, kind, text string) bool {
	for _, f := range fs {
		if f.Kind == kind && strings.Contains(f.Message, text) {
			return true
		}
	}
	return false
}
