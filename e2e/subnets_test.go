package e2e

import (
	"net/netip"
	"testing"

	"vpc-cni/cloud"
	"vpc-cni/internal/ec2sim"
)

var (
	taggedCIDR = netip.MustParsePrefix("100.64.64.0/24")
	taggedGW   = netip.MustParseAddr("100.64.64.1")
)

// With the node's subnet exhausted, ENIs go to the subnet tagged for
// discovery; pods there are wired to its gateway (the ENI's route table),
// reach a host in the VPC with their own address, and reach each other.
func TestSubnetDiscoveryOnASimulatedVPC(t *testing.T) {
	v := newVPCWorldPrepared(t, func(s *ec2sim.Sim) map[string]netip.Addr {
		id, err := s.AddSubnet(taggedCIDR, "", map[string]string{cloud.CNISubnetTag: "1"})
		if err != nil {
			t.Fatal(err)
		}
		s.SetSubnetFree(0)
		return map[string]netip.Addr{id: taggedGW}
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
