package netns

import (
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"vpc-cni/internal/testsupport/testenv"
)

// BenchmarkPodWiringFamilies times SetupPod, CheckPod and TeardownPod of an
// IPv4, an IPv6-only (with and without its v4if0) and a dual-stack pod, on
// a node with no other pods.
func BenchmarkPodWiringFamilies(b *testing.B) {
	cases := []struct{ name, ip4, ip6, egress string }{
		{"ipv4", "100.64.7.7", "", ""},
		{"ipv6", "", "fd00:7::7", ""},
		{"ipv6+v4egress", "", "fd00:7::7", "169.254.172.7"},
		{"dual", "100.64.7.7", "fd00:7::7", ""},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			node := newNode6(b)
			_, p := newPod(b, "bench", "100.64.7.7", 0)
			p.IP, p.IP6 = parseOrZero(c.ip4), parseOrZero(c.ip6)
			if c.egress != "" {
				p.Egress = &Egress{IP: netip.MustParseAddr(c.egress)}
			}
			benchWiring(b, node, p)
		})
	}
}

func parseOrZero(s string) netip.Addr {
	if s == "" {
		return netip.Addr{}
	}
	return netip.MustParseAddr(s)
}

func benchWiring(b *testing.B, node ns.NetNS, p Pod) {
	var setup, check, teardown time.Duration
	inNS(b, node, func() error {
		b.ResetTimer()
		for range b.N {
			start := time.Now()
			if _, err := SetupPod(p); err != nil {
				return err
			}
			setup += time.Since(start)
			start = time.Now()
			if err := CheckPod(p); err != nil {
				return err
			}
			check += time.Since(start)
			start = time.Now()
			if err := TeardownPod(p); err != nil {
				return err
			}
			teardown += time.Since(start)
		}
		return nil
	})
	n := float64(b.N) * float64(time.Millisecond)
	b.ReportMetric(float64(setup)/n, "ms/setup")
	b.ReportMetric(float64(check)/n, "ms/check")
	b.ReportMetric(float64(teardown)/n, "ms/teardown")
}

// BenchmarkDAD measures what the kernel does with a pod's /128: the time
// from the address add to the address leaving "tentative", with the
// kernel's duplicate address detection (the default sysctls of a fresh
// namespace) and with IFA_F_NODAD, as SetupPod adds it. Run with
// -benchtime=Nx: a DAD op takes about a second.
func BenchmarkDAD(b *testing.B) {
	for _, nodad := range []bool{false, true} {
		b.Run(fmt.Sprintf("nodad=%v", nodad), func(b *testing.B) {
			n := testenv.NewNetNS(b)
			var total time.Duration
			inNS(b, n, func() error {
				link, err := upVethPair()
				if err != nil {
					return err
				}
				b.ResetTimer()
				for i := range b.N {
					d, err := timeToUsable(link, netip.AddrFrom16([16]byte{0xfd, 0, 0, 9, 15: byte(i%250 + 1)}), nodad)
					if err != nil {
						return err
					}
					total += d
				}
				return nil
			})
			b.ReportMetric(float64(total)/float64(b.N)/float64(time.Millisecond), "ms/usable")
		})
	}
}

// upVethPair makes a veth pair in the calling thread's (the test's) netns,
// both ends up with carrier, and returns one end.
func upVethPair() (netlink.Link, error) {
	if err := refuseOriginalNetNS(); err != nil {
		return nil, err
	}
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "dad0"}, PeerName: "dad1"}
	if err := netlink.LinkAdd(veth); err != nil {
		return nil, err
	}
	for _, name := range []string{"dad1", "dad0"} {
		l, err := netlink.LinkByName(name)
		if err != nil {
			return nil, err
		}
		if err := netlink.LinkSetUp(l); err != nil {
			return nil, err
		}
	}
	return netlink.LinkByName("dad0")
}

// timeToUsable adds ip/128 to link and polls until it is not tentative and
// its local route is installed (packets to it are delivered), then deletes it.
func timeToUsable(link netlink.Link, ip netip.Addr, nodad bool) (time.Duration, error) {
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: ipOf(ip), Mask: net.CIDRMask(128, 128)}}
	if nodad {
		addr.Flags = unix.IFA_F_NODAD
	}
	start := time.Now()
	if err := netlink.AddrAdd(link, addr); err != nil {
		return 0, err
	}
	defer netlink.AddrDel(link, addr)
	for time.Since(start) < 10*time.Second {
		addrs, err := netlink.AddrList(link, unix.AF_INET6)
		if err != nil {
			return 0, err
		}
		for _, a := range addrs {
			if a.IP.Equal(addr.IP) && a.Flags&(unix.IFA_F_TENTATIVE|unix.IFA_F_DADFAILED) == 0 && hasLocalRoute(ip) {
				return time.Since(start), nil
			}
		}
		time.Sleep(time.Millisecond)
	}
	return 0, fmt.Errorf("%s still tentative after 10s", ip)
}

// BenchmarkFirstContact6 times, after SetupPod of an IPv6 pod, the node's
// first ping to it: the node must solicit the pod's address from its host
// veth, which the kernel does not do while the veth's link-local address is
// tentative. host_dad=true is the kernel default (the reference's host
// veth); false is SetupPod's accept_dad=0.
func BenchmarkFirstContact6(b *testing.B) {
	for _, dad := range []bool{true, false} {
		b.Run(fmt.Sprintf("host_dad=%v", dad), func(b *testing.B) {
			if dad {
				setting := &hostVethIPv6Sysctls[len(hostVethIPv6Sysctls)-1]
				if setting.key != "accept_dad" {
					b.Fatalf("the last host veth sysctl is %s, not accept_dad", setting.key)
				}
				setting.value = "1"
				defer func() { setting.value = "0" }()
			}
			node := newNode6(b)
			_, p := newPod6(b, "first", "", "fd00:8::8")
			var total time.Duration
			inNS(b, node, func() error {
				b.ResetTimer()
				for range b.N {
					start := time.Now()
					if _, err := SetupPod(p); err != nil {
						return err
					}
					if _, err := Ping(p.IP6, 5*time.Second); err != nil {
						return err
					}
					total += time.Since(start)
					b.StopTimer()
					if err := TeardownPod(p); err != nil {
						return err
					}
					b.StartTimer()
				}
				return nil
			})
			b.ReportMetric(float64(total)/float64(b.N)/float64(time.Millisecond), "ms/first-reply")
		})
	}
}

func hasLocalRoute(ip netip.Addr) bool {
	routes, err := netlink.RouteListFiltered(unix.AF_INET6, &netlink.Route{Table: unix.RT_TABLE_LOCAL, Dst: hostNet(ip)},
		netlink.RT_FILTER_TABLE|netlink.RT_FILTER_DST)
	return err == nil && len(routes) > 0
}
