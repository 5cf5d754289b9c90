package plugin

import (
	"testing"

	"github.com/containernetworking/cni/pkg/types"
)

func prevResult(ip string) map[string]any {
	return map[string]any{"prevResult": map[string]any{"cniVersion": "1.1.0",
		"ips": []any{map[string]any{"address": ip + "/32"}}}}
}

func TestCheckPassesOnWhatAddWired(t *testing.T) {
	n := newTestNode(t).seed(twoENIs, eni(0), eni(1, "100.64.1.10"))
	n.add("c1")
	if _, err := n.run("CHECK", n.args("c1", n.conf("1.1.0", prevResult("100.64.1.10")))); err != nil {
		t.Fatal(err)
	}
}

func TestCheckNamesWhatIsWrong(t *testing.T) {
	n := newTestNode(t).seed(twoENIs, eni(0, "100.64.0.10"))
	n.add("c1")
	_, err := n.run("CHECK", n.args("c2", n.conf("1.1.0", nil)))
	wantCode(t, err, types.ErrUnknownContainer, "no address is reserved for c2/eth0")

	_, err = n.run("CHECK", n.args("c1", n.conf("1.1.0", prevResult("100.64.0.77"))))
	wantCode(t, err, types.ErrInternal, "prevResult has 100.64.0.77 but c1/eth0 holds 100.64.0.10")

	args := n.args("c1", n.conf("1.1.0", nil))
	args.Netns = "/proc/nonexistent/ns/net"
	_, err = n.run("CHECK", args)
	wantCode(t, err, types.ErrInvalidNetNS, "/proc/nonexistent/ns/net")

	// The wiring differs from the assignment (an MTU change since ADD).
	_, err = n.run("CHECK", n.args("c1", n.conf("1.1.0", map[string]any{"mtu": 1500})))
	wantCode(t, err, types.ErrInternal, "pod wiring: wired as")

	clear(n.host.pods)
	_, err = n.run("CHECK", n.args("c1", n.conf("1.1.0", nil)))
	wantCode(t, err, types.ErrInternal, "pod wiring: no host route to 100.64.0.10")
}

func TestCheckAsIPAMDelegateChecksOnlyTheRules(t *testing.T) {
	n := newTestNode(t).seed(twoENIs, eni(0), eni(1, "100.64.1.10"))
	if _, err := n.run("ADD", n.args("c1", n.ipamConf("1.1.0", nil))); err != nil {
		t.Fatal(err)
	}
	// The interface plugin owns the namespace's wiring; a delegate does not
	// look into it, but still checks up front that the path is a pod's.
	if _, err := n.run("CHECK", n.args("c1", n.ipamConf("1.1.0", nil))); err != nil || len(n.host.pods) != 0 {
		t.Fatalf("CHECK: %v, pods %v", err, n.host.pods)
	}
	args := n.args("c1", n.ipamConf("1.1.0", nil))
	args.Netns = "/proc/nonexistent/ns/net"
	_, err := n.run("CHECK", args)
	wantCode(t, err, types.ErrInvalidNetNS, "/proc/nonexistent/ns/net does not exist")
	clear(n.host.rules)
	_, err = n.run("CHECK", n.args("c1", n.ipamConf("1.1.0", nil)))
	wantCode(t, err, types.ErrInternal, "policy rules: no rule from 100.64.1.10 to table 2")
}

func TestCheckOnANodeNeverReconciledIsUnknownContainer(t *testing.T) {
	n := newTestNode(t)
	_, err := n.run("CHECK", n.args("c1", n.conf("1.1.0", nil)))
	wantCode(t, err, types.ErrUnknownContainer, "c1/eth0")
}
