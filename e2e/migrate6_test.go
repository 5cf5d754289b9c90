package e2e

import (
	"context"
	"encoding/json"
	"net"
	"net/netip"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"vpc-cni/internal/awsnode"
	"vpc-cni/netns"
)

// A node the reference runs in its IPv6 mode (one /80 on the primary ENI,
// each pod a /128 of it) is taken over by `vpcctl migrate --from-aws-node`:
// both pods are recorded with their /128s, a reconcile leaves them assigned
// and wired, a new ADD never gets one of them, and DEL of a migrated pod
// through this plugin removes its wiring.
func TestPrivilegedMigrateFromAWSNodeIPv6(t *testing.T) {
	w := newWorld(t, worldOpts{instanceType: "m5.large", env: ipv6Env, fresh: true})
	primary := w.sim.State().ENIs[0].ID
	prefix := refAllocate6(t, w, primary)
	pods := []refPod{
		// ::1 and ::2: the first /128s this plugin hands out, so a new ADD
		// would collide with them were they not recorded.
		{w.newPod("web6-0"), addrIn(prefix, 1), 0},
		{w.newPod("web6-1"), addrIn(prefix, 2), 0},
	}
	for _, p := range pods {
		w.inNode(func() error {
			_, err := netns.SetupPod(netns.Pod{NetnsPath: p.ns.Path(), IfName: p.ifname, HostVeth: p.hostVeth(), MTU: 9001, IP6: p.ip})
			return err
		})
	}
	out := w.migrate(t, "--checkpoint", refCheckpoint(t, awsnode.Version, pods...))
	if countAdopted(out) != len(pods) {
		t.Fatalf("migrate adopted %d pods, want %d: %+v", countAdopted(out), len(pods), out.Pods)
	}
	w.checkStore()
	assertMigrated6(t, w, pods, primary)
	w.reconcile(ipv6Env...)
	assertMigrated6(t, w, pods, primary)

	conf := mustJSON(t, w.conf(nil))
	for _, p := range w.newPods("new6", 4) {
		got := anyAddr(t, w.add(p, conf).IPs[0].Address.IP)
		if !prefix.Contains(got) { // the migrated /80, where a collision could happen
			t.Errorf("ADD %s got %s, outside the reference's %s", p.name, got, prefix)
		}
		for _, m := range pods {
			if got == m.ip {
				t.Errorf("ADD %s got %s, which migrated pod %s holds", p.name, got, m.name)
			}
		}
	}
	w.del(pods[0].pod, conf)
	// The veth stays until the pod's namespace goes (netns.DetachPod).
	if route, rule, _ := wiring6(w, pods[0]); route || rule {
		t.Errorf("%s after DEL: route %v, rule %v left", pods[0].name, route, rule)
	}
	if _, ok := w.assignmentsByKey()[pods[0].id+"/"+pods[0].ifname]; ok {
		t.Errorf("%s: assignment left after DEL", pods[0].name)
	}
	assertMigrated6(t, w, pods[1:], primary)
	w.checkStore()
}

// refAllocate6 does what ipamd's IPv6 mode does: one /80 on the primary ENI.
func refAllocate6(t *testing.T, w *world, eni string) netip.Prefix {
	t.Helper()
	res, err := refEC2(w).AssignIpv6Addresses(context.Background(), &ec2.AssignIpv6AddressesInput{
		NetworkInterfaceId: aws.String(eni), Ipv6PrefixCount: aws.Int32(1)})
	if err != nil || len(res.AssignedIpv6Prefixes) != 1 {
		t.Fatalf("AssignIpv6Addresses: %v %+v", err, res)
	}
	p, err := netip.ParsePrefix(res.AssignedIpv6Prefixes[0])
	if err != nil || p.Bits() != 80 {
		t.Fatalf("assigned prefix %q: %v", res.AssignedIpv6Prefixes[0], err)
	}
	return p
}

// addrIn is the address n of prefix.
func addrIn(prefix netip.Prefix, n byte) netip.Addr {
	b := prefix.Addr().As16()
	b[15] = n
	return netip.AddrFrom16(b)
}

// assertMigrated6: each pod is assigned its /128 on the primary ENI with
// the checkpoint's identity, pool status lists it, and its wiring is there.
func assertMigrated6(t *testing.T, w *world, pods []refPod, eni string) {
	t.Helper()
	have := w.assignmentsByKey()
	listed := statusPods6(t, w)
	for _, p := range pods {
		a, ok := have[p.id+"/"+p.ifname]
		switch {
		case !ok:
			t.Errorf("%s: no assignment", p.name)
		case a.IPv6 != p.ip || a.IP.IsValid() || a.ENIID != eni || a.HostVeth != p.hostVeth() || a.Netns != p.ns.Path() ||
			a.PodNamespace != p.namespace || a.PodName != p.name:
			t.Errorf("%s: assignment %+v; want %s on %s, veth %s", p.name, a, p.ip, eni, p.hostVeth())
		}
		if listed[p.id] != p.ip.String() {
			t.Errorf("%s: pool status lists ipv6 %q, want %s", p.name, listed[p.id], p.ip)
		}
		if route, rule, veth := wiring6(w, p); !route || !rule || !veth {
			t.Errorf("%s: wiring route %v, rule %v, veth %v", p.name, route, rule, veth)
		}
	}
}

// statusPods6 is `pool status -o json`'s ipv6 per container ID.
func statusPods6(t *testing.T, w *world) map[string]string {
	t.Helper()
	r := w.vpcctl(nil, "pool", "status", "-o", "json")
	var st struct {
		Pods []struct {
			ContainerID string `json:"containerId"`
			IPv6        string `json:"ipv6"`
		} `json:"pods"`
	}
	if r.err != nil || json.Unmarshal(r.stdout, &st) != nil {
		t.Fatalf("pool status: %v\n%s\n%s", r.err, r.stdout, r.stderr)
	}
	out := map[string]string{}
	for _, p := range st.Pods {
		out[p.ContainerID] = p.IPv6
	}
	return out
}

// wiring6 reports whether the node has p's /128 route through its veth, its
// "to" rule at 512, and the veth itself.
func wiring6(w *world, p refPod) (route, rule, veth bool) {
	dst := &net.IPNet{IP: p.ip.AsSlice(), Mask: net.CIDRMask(128, 128)}
	w.inNode(func() error {
		link, err := netlink.LinkByName(p.hostVeth())
		if err != nil {
			return nil // gone
		}
		veth = true
		routes, err := netlink.RouteList(link, unix.AF_INET6)
		if err != nil {
			return err
		}
		for _, r := range routes {
			route = route || (r.Dst != nil && r.Dst.String() == dst.String())
		}
		return nil
	})
	w.inNode(func() error {
		rules, err := netlink.RuleList(unix.AF_INET6)
		for _, r := range rules {
			rule = rule || (r.Priority == netns.PrioToPod && r.Dst != nil && r.Dst.String() == dst.String())
		}
		return err
	})
	return route, rule, veth
}
