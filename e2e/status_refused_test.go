package e2e

import (
	"errors"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/types"
)

// growActions are the EC2 calls that give a node pod addresses.
var growActions = []string{"CreateNetworkInterface", "AssignPrivateIpAddresses"}

// A node that holds no pod address and whose every grow EC2 refuses (the
// instance role lacks the actions) cannot start a pod: STATUS says so with
// code 50 naming the missing action, so the scheduler sends its pods
// elsewhere instead of to ADDs that fail with code 11.
func TestPrivilegedStatusOfANodeWhoseGrowsAreDeniedNamesTheAction(t *testing.T) {
	w := newWorld(t, worldOpts{fresh: true})
	for _, a := range growActions {
		w.sim.DenyAction(a)
	}
	if r := w.vpcctl(nil, "reconcile", "--wait", "--timeout", "1m"); r.err == nil {
		t.Fatalf("a pass whose grows are denied succeeded:\n%s%s", r.stdout, r.stderr)
	}
	rt := w.runtime(conflist(w.conf(nil)))
	err := rt.status()
	var te *types.Error
	if !errors.As(err, &te) || te.Code != types.ErrPluginNotAvailable {
		t.Fatalf("STATUS of a node that holds nothing and may not grow: %v, want code 50", err)
	}
	named := strings.Contains(te.Msg, "allow IAM action ec2:CreateNetworkInterface") ||
		strings.Contains(te.Msg, "allow IAM action ec2:AssignPrivateIpAddresses")
	if !strings.Contains(te.Msg, "EC2 refused the last reconcile pass (unauthorized") || !named {
		t.Errorf("STATUS says %q, want the refusal and the missing IAM action named", te.Msg)
	}
	r := w.cni("ADD", w.newPod("refused"), mustJSON(t, w.conf(nil)))
	if e := cniError(t, r); e.Code != types.ErrTryAgainLater {
		t.Errorf("ADD on that node: code %d %q, want 11", e.Code, e.Msg)
	}

	for _, a := range growActions {
		w.sim.AllowAction(a)
	}
	w.reconcileUntilSettled()
	expectStatus(t, rt, 0, "the grants restored")
}

// A node with a running pod never fails STATUS for capacity, however its
// grows fail: containerd 2.x would make the node NotReady and Kubernetes
// would evict the pod.
func TestPrivilegedStatusOfANodeWithARunningPodWhoseGrowsAreDeniedIsReady(t *testing.T) {
	targets := []string{"WARM_IP_TARGET=1"}
	w := newWorld(t, worldOpts{env: targets})
	conf := mustJSON(t, w.conf(map[string]any{"inlineGrow": false}))
	for _, a := range growActions {
		w.sim.DenyAction(a)
	}
	w.add(w.newPod("running"), conf) // takes the one free address
	if r := w.vpcctl(nil, "reconcile", "--wait", "--timeout", "1m"); r.err == nil {
		t.Fatalf("a pass whose grows are denied succeeded:\n%s%s", r.stdout, r.stderr)
	}
	expectStatus(t, w.runtime(conflist(w.conf(nil))), 0, "a running pod, grows denied")
}
