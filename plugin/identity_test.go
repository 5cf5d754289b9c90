package plugin

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/types"

	"vpc-cni/internal/testsupport/simtest"
	"vpc-cni/pool"
	"vpc-cni/sim/ec2sim"
	"vpc-cni/store"
)

// unconfirmed makes the seeded node one confirmed under another kernel
// boot (before a reboot, or on another machine), as mac's.
func (n *testNode) unconfirmed(mac string) *testNode {
	n.t.Helper()
	n.update(func(tx *store.Tx) error {
		node, _, err := tx.Node()
		if err != nil {
			return err
		}
		node.PrimaryMAC = mac
		return tx.PutNode(withNodeField(n.t, node, "confirmedBoot", "an-earlier-boot"))
	})
	return n
}

func (n *testNode) assignmentCount() int {
	n.t.Helper()
	var all []store.Assignment
	if err := n.st.View(func(tx *store.Tx) (err error) { all, err = tx.Assignments(); return err }); err != nil {
		n.t.Fatal(err)
	}
	return len(all)
}

// IMDS says the state file is another instance's: STATUS fails with code 50
// naming the cause, and an ADD (inline grow off) takes nothing from it.
func TestAnotherInstancesStateIsNotServed(t *testing.T) {
	simtest.Start(t, ec2sim.Config{InstanceID: "i-0999"})
	n := newTestNode(t).seed(pool.Limits{MaxENIs: 1, IPv4PerENI: 3}, eni(0, "100.64.0.10", "100.64.0.11")).unconfirmed("02:00:00:00:00:01")
	wantCode(t, n.status(nil), types.ErrPluginNotAvailable, "state not confirmed for this instance: the state file is instance i-0123's")
	_, err := n.run("ADD", n.args("c1", n.conf("1.1.0", nil)))
	wantCode(t, err, types.ErrTryAgainLater, "IMDS says this is i-0999")
	if got := n.assignmentCount(); got != 0 {
		t.Errorf("another instance's state handed out %d addresses", got)
	}
}

// The same instance after a reboot: STATUS is ready, records the boot, and
// ADDs take from the pool again.
func TestARebootedNodeIsConfirmedByIMDS(t *testing.T) {
	sim := simtest.Start(t, ec2sim.Config{InstanceID: "i-0123"})
	n := newTestNode(t).seed(pool.Limits{MaxENIs: 1, IPv4PerENI: 3}, eni(0, "100.64.0.10", "100.64.0.11")).unconfirmed(sim.State().ENIs[0].MAC)
	if err := n.status(nil); err != nil {
		t.Fatalf("STATUS after a reboot: %v", err)
	}
	var node store.Node
	n.update(func(tx *store.Tx) (err error) { node, _, err = tx.Node(); return err })
	if got := nodeField(t, node, "confirmedBoot"); got != thisBoot(t) {
		t.Errorf("confirmed boot %q, want this boot %q", got, thisBoot(t))
	}
	n.add("c1")
}

// IMDS does not answer after a boot: STATUS stays ready (a NotReady node
// is evicted), and ADD hands out nothing until IMDS confirms the node.
func TestAnUnconfirmedNodeWithoutIMDSIsReadyButHandsOutNothing(t *testing.T) {
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", simtest.ClosedURL(t))
	n := newTestNode(t).seed(pool.Limits{MaxENIs: 1, IPv4PerENI: 3}, eni(0, "100.64.0.10", "100.64.0.11")).unconfirmed("02:00:00:00:00:01")
	if err := n.status(nil); err != nil {
		t.Fatalf("STATUS with IMDS down: %v", err)
	}
	_, err := n.run("ADD", n.args("c1", n.conf("1.1.0", nil)))
	wantCode(t, err, types.ErrTryAgainLater, "not confirmed for this instance in this boot, and IMDS did not answer")
	if got := n.assignmentCount(); got != 0 {
		t.Errorf("an unconfirmed state handed out %d addresses", got)
	}
}

// thisBoot is the kernel's boot ID, read as the plugin reads it.
func thisBoot(t testing.TB) string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// withNodeField is node with one field (by its JSON name) set to value.
func withNodeField(t testing.TB, node store.Node, key, value string) store.Node {
	m := map[string]any{}
	b, _ := json.Marshal(node)
	_ = json.Unmarshal(b, &m)
	m[key] = value
	b, _ = json.Marshal(m)
	if err := json.Unmarshal(b, &node); err != nil {
		t.Fatal(err)
	}
	return node
}

// nodeField is one field of node, by its JSON name.
func nodeField(t testing.TB, node store.Node, key string) string {
	m := map[string]any{}
	b, _ := json.Marshal(node)
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	s, _ := m[key].(string)
	return s
}
