package e2e

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"vpc-cni/cloud"
	"vpc-cni/settings"
	"vpc-cni/sim/ec2sim"
)

var (
	podCIDR    = netip.MustParsePrefix("100.102.0.0/20") // custom networking, in a secondary VPC CIDR
	podGW      = netip.MustParseAddr("100.102.0.1")
	podGroups  = []string{"sg-0aaaaaaaaaaaaaaa1", "sg-0bbbbbbbbbbbbbbb2"}
	taggedCIDR = netip.MustParsePrefix("100.64.64.0/24")
	taggedGW   = netip.MustParseAddr("100.64.64.1")
)

// With the node's subnet exhausted, ENIs go to the subnet tagged for
// discovery; pods there are wired to its gateway (the ENI's route table),
// reach a host in the VPC with their own address, and reach each other.
func TestPrivilegedSubnetDiscoveryOnASimulatedVPC(t *testing.T) {
	v := newVPCWorldPrepared(t, func(s *ec2sim.Sim) (map[string]netip.Addr, []string) {
		id, err := s.AddSubnet(taggedCIDR, "", map[string]string{cloud.CNISubnetTag: "1"})
		if err != nil {
			t.Fatal(err)
		}
		s.SetSubnetFree(0)
		return map[string]netip.Addr{id: taggedGW}, nil
	}, "WARM_IP_TARGET=4")
	a, aIP := v.podNamed("discovered-a")
	b, bIP := v.podNamed("discovered-b")
	for _, ip := range []netip.Addr{aIP, bIP} {
		if !taggedCIDR.Contains(ip) {
			t.Fatalf("pod address %s is not from the tagged subnet %s", ip, taggedCIDR)
		}
	}
	v.must(b.ns, func() error {
		t.Cleanup(serveWhoami(t, netip.AddrPortFrom(bIP, podPort)))
		return nil
	})
	sees(t, a.ns, clientIP, whoamiPort, aIP) // out of the ENI, through the tagged subnet's router
	sees(t, a.ns, bIP, podPort, aIP)
}

// Custom networking: pods get addresses of the zone's configured subnet (a
// secondary VPC CIDR) on ENIs with the configured groups, none of the
// primary ENI, and reach the VPC and each other.
func TestPrivilegedCustomNetworkingOnASimulatedVPC(t *testing.T) {
	v := newVPCWorldPrepared(t, func(s *ec2sim.Sim) (map[string]netip.Addr, []string) {
		s.AssociateVPCCIDR(netip.MustParsePrefix("100.102.0.0/16"))
		id, err := s.AddSubnet(podCIDR, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		line := settings.ENIConfigKey(s.State().AZ) + "=subnet=" + id + ",securityGroups=" + strings.Join(podGroups, ";")
		return map[string]netip.Addr{id: podGW}, []string{"AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG=true", line}
	}, "WARM_IP_TARGET=2")
	a, aIP := v.podNamed("custom-a")
	b, bIP := v.podNamed("custom-b")
	for _, ip := range []netip.Addr{aIP, bIP} {
		if !podCIDR.Contains(ip) {
			t.Fatalf("pod address %s is not from the pod subnet %s", ip, podCIDR)
		}
	}
	for _, e := range v.w.sim.State().ENIs {
		switch {
		case e.DeviceIndex == 0 && len(e.Secondary) > 0:
			t.Errorf("the primary ENI got secondary addresses %v", e.Secondary)
		case e.DeviceIndex > 0 && !slices.Equal(e.Groups, podGroups):
			t.Errorf("ENI %s has groups %v; want %v", e.ID, e.Groups, podGroups)
		}
	}
	v.syncVPC()
	v.must(b.ns, func() error {
		t.Cleanup(serveWhoami(t, netip.AddrPortFrom(bIP, podPort)))
		return nil
	})
	sees(t, a.ns, clientIP, whoamiPort, aIP)
	sees(t, a.ns, bIP, podPort, aIP)
}

// podNamed adds a pod; its address is on a secondary ENI when the node's
// primary ENI has none to give.
func (v *vpcNet) podNamed(name string) (*pod, netip.Addr) {
	v.w.tb.Helper()
	p := v.w.newPod(name)
	res := v.w.add(p, mustJSON(v.w.tb, v.w.conf(nil)))
	ip, _ := netip.AddrFromSlice(res.IPs[0].Address.IP.To4())
	for _, a := range v.w.assignments() {
		if a.IP == ip && a.DeviceIndex == 0 {
			v.w.tb.Fatalf("pod %s got %s on the primary ENI", name, ip)
		}
	}
	return p, ip
}
