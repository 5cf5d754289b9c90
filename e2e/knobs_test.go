package e2e

import (
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/containernetworking/plugins/pkg/testutils"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"vpc-cni/hostnet"
	"vpc-cni/netns"
	"vpc-cni/store"
)

// routeTableFor is the table the node's kernel picks for a packet a pod
// sends from ip to dst (in by the pod's host veth).
func (w *world) routeTableFor(p *pod, ip, dst netip.Addr) int {
	w.tb.Helper()
	table := -1
	w.inNode(func() error {
		veth, err := netlink.LinkByName(p.hostVeth())
		if err != nil {
			return err
		}
		routes, err := netlink.RouteGetWithOptions(net.IP(dst.AsSlice()),
			&netlink.RouteGetOptions{SrcAddr: net.IP(ip.AsSlice()), Iif: veth.Attrs().Name})
		if err != nil || len(routes) == 0 {
			return err
		}
		table = routes[0].Table
		return nil
	})
	return table
}

// serviceRule reports whether the node has `to cidr lookup main` at 1535.
func (w *world) serviceRule(cidr netip.Prefix) bool {
	found := false
	w.inNode(func() error {
		rules, err := netlink.RuleList(unix.AF_INET)
		for _, r := range rules {
			found = found || r.Priority == hostnet.PrioExternalService && r.Dst != nil && r.Dst.String() == cidr.String() &&
				r.Table == unix.RT_TABLE_MAIN
		}
		return err
	})
	return found
}

// AWS_EXTERNAL_SERVICE_CIDRS: a pod on a secondary ENI reaches those CIDRs
// through the main table (the primary ENI), every pass keeps the rule, and a
// CIDR dropped from the knob loses it.
func TestPrivilegedExternalServiceCIDRsGoThroughMain(t *testing.T) {
	svc := netip.MustParsePrefix("100.100.0.0/24") // internetIP's
	env := []string{"WARM_IP_TARGET=8", "AWS_EXTERNAL_SERVICE_CIDRS=" + svc.String()}
	v := newVPCWorld(t, env...)
	p, podIP := v.podOnSecondaryENI()
	other := netip.MustParseAddr("100.102.0.1")
	if got := v.w.routeTableFor(p, podIP, internetIP); got != unix.RT_TABLE_MAIN || !v.w.serviceRule(svc) {
		t.Fatalf("to %s from a secondary-ENI pod: table %d (rule %v); want main", internetIP, got, v.w.serviceRule(svc))
	}
	if got := v.w.routeTableFor(p, podIP, other); got == unix.RT_TABLE_MAIN {
		t.Fatalf("to %s (not a service CIDR): table main; want the ENI's", other)
	}
	v.w.inNode(func() error {
		r := netlink.NewRule()
		r.Family, r.Priority, r.Table = unix.AF_INET, hostnet.PrioExternalService, unix.RT_TABLE_MAIN
		r.Dst = &net.IPNet{IP: svc.Addr().AsSlice(), Mask: net.CIDRMask(svc.Bits(), 32)}
		return netlink.RuleDel(r) // another program deletes it
	})
	if v.doctorSaysRulesInPlace(t, env) {
		t.Error("doctor says the rules are in place without the service rule")
	}
	v.w.reconcile(env...)
	if !v.w.serviceRule(svc) || v.w.routeTableFor(p, podIP, internetIP) != unix.RT_TABLE_MAIN {
		t.Fatal("the next pass did not repair the deleted service rule")
	}
	v.w.writeConfig(env[:1]) // the operator drops the knob
	v.w.reconcile(env[:1]...)
	if v.w.serviceRule(svc) || v.w.routeTableFor(p, podIP, internetIP) == unix.RT_TABLE_MAIN {
		t.Fatal("the rule of a CIDR dropped from the knob is still there")
	}
}

// AWS_VPC_K8S_CNI_VETHPREFIX and POD_MTU: the plugin names the host veth with
// the prefix and gives the pod's interface POD_MTU while the ENIs keep
// AWS_VPC_ENI_MTU; gc finds a dead pod's veth by the prefix, and a rebuild
// restores a live one's.
func TestPrivilegedVethPrefixAndPodMTUAreFollowed(t *testing.T) {
	env := []string{"AWS_VPC_K8S_CNI_VETHPREFIX=pod", "POD_MTU=1400", "AWS_VPC_ENI_MTU=9001"}
	w := newWorld(t, worldOpts{env: env})
	conf := mustJSON(t, w.conf(nil))
	live, gone := w.newPod("live"), w.newPod("gone")
	w.add(live, conf)
	w.add(gone, conf)
	veth := netns.HostVethNameWith("pod", live.namespace, live.name, live.id)
	var vethMTU, podMTU int
	w.inNode(func() error {
		l, err := netlink.LinkByName(veth)
		if err == nil {
			vethMTU = l.Attrs().MTU
		}
		return err
	})
	_ = live.ns.Do(func(ns.NetNS) error {
		l, err := netlink.LinkByName(live.ifname)
		if err == nil {
			podMTU = l.Attrs().MTU
		}
		return err
	})
	if !strings.HasPrefix(veth, "pod") || vethMTU != 1400 || podMTU != 1400 {
		t.Fatalf("host veth %s MTU %d, pod side MTU %d; want the prefix and POD_MTU 1400 on both", veth, vethMTU, podMTU)
	}
	_ = gone.ns.Close()
	if err := testutils.UnmountNS(gone.ns); err != nil {
		t.Fatal(err)
	}
	if r := w.vpcctl(nil, "gc"); r.err != nil {
		t.Fatalf("vpcctl gc: %v\n%s%s", r.err, r.stdout, r.stderr)
	}
	var st netns.HostState
	w.inNode(func() (err error) { st, err = netns.ListHostWith("pod"); return err })
	if len(st.Veths) != 1 || st.Veths[0] != veth {
		t.Fatalf("pod veths after gc: %v; want only %s", st.Veths, veth)
	}
	before := w.assignments()
	if err := os.Remove(filepath.Join(w.stateDir, store.DBFile)); err != nil {
		t.Fatal(err)
	}
	if r := w.vpcctl(nil, "state", "rebuild", "--force", "-o", "json"); r.err != nil {
		t.Fatalf("state rebuild: %v\n%s\n%s", r.err, r.stdout, r.stderr)
	}
	after := w.assignments()
	if len(before) != 1 || len(after) != 1 || after[0].IP != before[0].IP || after[0].HostVeth != veth {
		t.Fatalf("after rebuild %+v; want the live pod's %+v on %s", after, before, veth)
	}
}

// DISABLE_NETWORK_RESOURCE_PROVISIONING: pods use what is attached; the ADD
// that finds the pool empty fails saying why (its inline grow changes
// nothing), STATUS stays ready (the node is full, not broken), pool status names the knob, and the emulator saw
// no mutating call.
func TestPrivilegedDisabledProvisioningThroughThePlugin(t *testing.T) {
	w := newWorld(t, worldOpts{instanceType: "t3.small"})
	knob := "DISABLE_NETWORK_RESOURCE_PROVISIONING=true"
	w.writeConfig([]string{knob})
	w.sim.ResetCounters()
	conf := mustJSON(t, w.conf(nil))
	w.fillPrimary(conf)
	e := cniError(t, w.cni("ADD", w.newPod("more"), conf))
	if e.Code != types.ErrTryAgainLater || !strings.Contains(e.Msg, "DISABLE_NETWORK_RESOURCE_PROVISIONING") {
		t.Errorf("ADD on an empty pool: code %d %q; want 11 naming the knob", e.Code, e.Msg)
	}
	expectStatus(t, w.runtime(conflist(w.conf(nil))), 0, "provisioning off, pool empty: full")
	w.reconcile()
	r := w.vpcctl(nil, "pool", "status", "-o", "json")
	if r.err != nil || !strings.Contains(string(r.stdout), `"noProvisioning"`) {
		t.Errorf("pool status does not say why the pool does not grow (%v): %s", r.err, r.stdout)
	}
	for action, n := range w.sim.Counters() {
		if !strings.HasPrefix(action, "IMDS") && !strings.HasPrefix(action, "Describe") && n > 0 {
			t.Errorf("%d %s calls with provisioning disabled", n, action)
		}
	}
}
