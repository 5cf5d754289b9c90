package netns

import (
	"fmt"
	"net"
	"net/netip"
	"testing"

	"github.com/vishvananda/netlink"

	"vpc-cni/internal/testenv"
)

// BenchmarkPodWiring times one ADD's wiring (SetupPod), CHECK (CheckPod) and
// DEL's (TeardownPod) on a node that already carries the rules of `others`
// pods, since SetupPod reads the rule list.
func BenchmarkPodWiring(b *testing.B) {
	for _, others := range []int{0, 250} {
		b.Run(fmt.Sprintf("others=%d", others), func(b *testing.B) {
			node := newNode(b)
			_, p := newPod(b, "bench", "100.64.7.7", 3)
			inNS(b, node, func() error { return addOtherPodsRules(others) })
			benchWiring(b, node, p)
		})
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
