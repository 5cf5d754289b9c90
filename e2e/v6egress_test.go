package e2e

import (
	"encoding/json"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"

	"vpc-cni/netns"
)

// noIPv6OnPrimary is the failed step ENABLE_V6_EGRESS gives a node whose
// primary ENI has no IPv6.
const noIPv6OnPrimary = "ENABLE_V6_EGRESS needs an IPv6 address on the primary ENI"

// ENABLE_V6_EGRESS: an IPv4 pod gets a v6if0 from fd00::ac:0/118 and
// reaches the VPC's IPv6 host as the node's IPv6, once the primary ENI has
// one; before that, every pass says what is missing.
func TestPrivilegedV6EgressIPv4PodReachesIPv6HostAsTheNode(t *testing.T) {
	env := []string{"ENABLE_V6_EGRESS=true"}
	v := newVPCWorldWith(t, nil, noIPv6OnPrimary, env...)
	if failed := v.failedSteps(env); !strings.Contains(strings.Join(failed, "\n"), noIPv6OnPrimary) {
		t.Fatalf("a pass without an IPv6 on the primary ENI failed %q; want %q", failed, noIPv6OnPrimary)
	}
	// Its node rules failed, so the pass failed: exit 1, not a configuration error.
	r := v.w.vpcctl(env, "reconcile", "--wait", "--timeout", "1m")
	if code := r.state.ExitCode(); code != 1 || !strings.Contains(string(r.stderr), "node rules: "+noIPv6OnPrimary) {
		t.Fatalf("a pass whose node rules failed exited %d; want 1 naming the step\n%s%s", code, r.stdout, r.stderr)
	}
	v.setupIPv6()
	primary := v.w.sim.State().ENIs[0]
	node6 := netip.MustParseAddr(v.simAssignIPv6(primary.ID, "Ipv6AddressCount", 1)[0])
	v.w.inNode(func() error { // as the instance's DHCPv6 and router advertisement give it
		if err := addr6(netlink.LinkByName, netlink.AddrAdd, "eth0", node6, 128); err != nil {
			return err
		}
		eth0, err := netlink.LinkByName("eth0")
		if err != nil {
			return err
		}
		return netlink.RouteAdd(&netlink.Route{LinkIndex: eth0.Attrs().Index, Gw: ipOf(vpcRouter6),
			Dst: &net.IPNet{IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)}})
	})
	v.waitLinkLocal("eth0")
	v.syncVPC()
	v.w.expectFailed = ""
	v.w.reconcileUntilSettled(env...)

	rt := v.w.runtime(conflist(v.w.conf(nil)))
	p := v.w.newPod("v6egress")
	res, err := rt.add(p, nil)
	if err != nil {
		t.Fatalf("ADD: %v", err)
	}
	if !hasInterface(res, netns.EgressV6IfName, p.ns.Path()) {
		t.Fatalf("result lacks %s: %+v", netns.EgressV6IfName, res)
	}
	host6, _ := v.client6()
	sees(t, p.ns, host6, whoamiPort, node6)
	sees(t, p.ns, clientIP, whoamiPort, v.podIP(t, p)) // its IPv4 stays its own in the VPC
	if err := rt.del(p, nil); err != nil {
		t.Fatalf("DEL: %v", err)
	}
	if n := len(v.w.assignments()); n != 0 {
		t.Fatalf("%d assignments after DEL", n)
	}
	v.w.checkStore()
}

// failedSteps runs one pass and returns its failed steps.
func (v *vpcNet) failedSteps(env []string) []string {
	v.w.tb.Helper()
	r := v.w.vpcctl(env, "reconcile", "--wait", "--timeout", "1m", "-o", "json")
	var rep struct {
		Failed []string `json:"failed"`
	}
	if err := json.Unmarshal(r.stdout, &rep); err != nil {
		v.w.tb.Fatalf("vpcctl reconcile: %v, %v\n%s%s", r.err, err, r.stdout, r.stderr)
	}
	return rep.Failed
}

// podIP is the pod's IPv4 as the store holds it.
func (v *vpcNet) podIP(t *testing.T, p *pod) netip.Addr {
	t.Helper()
	a, ok := v.w.assignmentsByKey()[p.id+"/"+p.ifname]
	if !ok {
		t.Fatalf("no assignment for %s", p.name)
	}
	return a.IP
}
