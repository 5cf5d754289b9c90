package plugin

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/containernetworking/cni/pkg/types"

	"vpc-cni/pool"
	"vpc-cni/settings"
)

// With the mode on and no agent at the socket, ADD fails naming the agent
// and its socket, removes the wiring it made and gives the address back (cooling);
// a teardown that fails keeps the address (GC finds both later).
func TestAddGivesBackAllWhenTheAgentFails(t *testing.T) {
	t.Setenv(settings.NetworkPolicyMode, "strict")
	for _, teardownFails := range []bool{false, true} {
		n := newTestNode(t).seed(twoENIs, eni(0, "100.64.0.10"))
		if teardownFails {
			n.host.fail["TeardownPod"] = errors.New("netlink: busy")
		}
		sock := filepath.Join(t.TempDir(), "npa.sock")
		out, err := n.run("ADD", n.args("c1", n.conf("1.1.0", map[string]any{"policyAgentSocket": sock})))
		wantCode(t, err, types.ErrInternal, "network policy agent ("+sock+")")
		want := pool.Cooling // given back, as after a failed wiring
		if teardownFails {
			want = pool.Assigned
		}
		if out != "" || n.state("100.64.0.10") != want || (!teardownFails && len(n.host.pods) != 0) {
			t.Fatalf("teardown fails %v: printed %q, pods %v, .10 %s (want %s)", teardownFails, out, n.host.pods, n.state("100.64.0.10"), want)
		}
	}
}

// As an IPAM delegate another plugin names the host veth, which the agent
// cannot find: ADD refuses the mode (code 7) before taking anything.
func TestAddAsDelegateRefusesNetworkPolicy(t *testing.T) {
	t.Setenv(settings.NetworkPolicyMode, "standard")
	n := newTestNode(t).seed(twoENIs, eni(0, "100.64.0.10"))
	out, err := n.run("ADD", n.args("c1", n.ipamConf("1.1.0", nil)))
	wantCode(t, err, types.ErrInvalidNetworkConfig, "needs vpc-cni as the interface plugin")
	if out != "" || n.state("100.64.0.10") != pool.Free {
		t.Fatalf("printed %q, .10 %s", out, n.state("100.64.0.10"))
	}
}

// DEL succeeds with the mode on and no agent: it is logged, not failed.
func TestDelSucceedsWithoutTheAgent(t *testing.T) {
	t.Setenv(settings.NetworkPolicyMode, "strict")
	n := newTestNode(t).seed(twoENIs, eni(0, "100.64.0.10"))
	conf := n.conf("1.1.0", map[string]any{"policyAgentSocket": filepath.Join(t.TempDir(), "npa.sock")})
	if _, err := n.run("DEL", n.args("c1", conf)); err != nil {
		t.Fatalf("DEL: %v", err)
	}
}
