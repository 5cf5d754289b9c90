package netns

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"

	"vpc-cni/internal/testsupport/testenv"
)

// BenchmarkPodWiring times one ADD's wiring (SetupPod), CHECK (CheckPod) and
// DEL's (TeardownPod) on a node that already carries the rules of `others`
// pods, since SetupPod reads the rule list.
func BenchmarkPodWiring(b *testing.B) {
	for _, others := range []int{0, 250} {
		for _, named := range []bool{false, true} {
			b.Run(fmt.Sprintf("others=%d/sandbox-alias=%v", others, named), func(b *testing.B) {
				node := newNode(b)
				_, p := newPod(b, "bench", "100.64.7.7", 3)
				if named { // the host veth's alias, as the plugin's ADD writes it
					p.Sandbox = Sandbox{Network: "vpc", ContainerID: strings.Repeat("c", 64), IfName: "eth0"}
				}
				inNS(b, node, func() error { return addOtherPodsRules(others) })
				benchWiring(b, node, p)
			})
		}
	}
}

// addOtherPodsRules adds the 512 and 1536 rules n other pods would have.
func addOtherPodsRules(n int) error {
	base := netip.MustParseAddr("100.65.0.1")
	for range n {
		for _, s := range []ruleSpec{toPodRule(base), fromPodRule(base, 2)} {
			if err := netlink.RuleAdd(s.netlinkRule()); err != nil {
				return err
			}
		}
		base = base.Next()
	}
	return nil
}

// BenchmarkSetupENI times one reconcile's SetupENI of an ENI already set up.
func BenchmarkSetupENI(b *testing.B) {
	node := newNode(b)
	vpc := testenv.NewNetNS(b)
	inNS(b, node, func() error {
		mac, err := net.ParseMAC(testENI.MAC)
		if err != nil {
			return err
		}
		if _, err := addENILink("ens6", mac, vpc); err != nil {
			return err
		}
		b.ResetTimer()
		for range b.N {
			if err := SetupENI(testENI); err != nil {
				return err
			}
		}
		return nil
	})
}

// BenchmarkInUseGuard times SetupPod's point-of-use guard alone (inUse: one
// main-table read for the address's host route) on a node where the
// address is free and `others` pods are routed, and where a live pod holds
// it (the read plus a link read).
func BenchmarkInUseGuard(b *testing.B) {
	for _, held := range []bool{false, true} {
		b.Run(fmt.Sprintf("held=%v", held), func(b *testing.B) {
			node := newNode(b)
			_, p := newPod(b, "guard", "100.64.7.8", 3)
			ip := netip.MustParseAddr("100.64.7.9")
			if held {
				ip = p.IP
			}
			inNS(b, node, func() error {
				if _, err := SetupPod(p); err != nil {
					return err
				}
				return withHost(func(h *netlink.Handle) error {
					b.ResetTimer()
					for range b.N {
						_ = inUse(h, ip, "other")
					}
					return nil
				})
			})
		})
	}
}

// BenchmarkReleaseGuardRead times what a reconcile pass that may release
// reads of the kernel first (reconcile/guard.go): one ListHostWith (links,
// rules and routes dumped once) and its live pods' routes, on a node with
// `pods` running pods.
func BenchmarkReleaseGuardRead(b *testing.B) {
	for _, pods := range []int{0, 30, 110} {
		b.Run(fmt.Sprintf("pods=%d", pods), func(b *testing.B) {
			node := newNode(b)
			base := netip.MustParseAddr("100.64.8.1")
			for i := range pods {
				_, p := newPod(b, fmt.Sprintf("live%d", i), base.String(), 3)
				inNS(b, node, func() error { _, err := SetupPod(p); return err })
				base = base.Next()
			}
			inNS(b, node, func() error {
				b.ResetTimer()
				for range b.N {
					hs, err := ListHostWith(VethPrefix)
					if err != nil {
						return err
					}
					if got := len(hs.LivePods()); got != pods {
						return fmt.Errorf("%d live pods' routes, want %d", got, pods)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/read")
				return nil
			})
		})
	}
}
