package reconcile

import (
	"errors"
	"testing"

	"vpc-cni/store"
)

// The reference's documented 0-pod rows hold end to end: real SDK, emulator
// over HTTP, passes until the plan is empty, and then EC2 itself holds the
// row's ENIs and addresses.
func TestZeroPodRowsEndToEnd(t *testing.T) {
	rows := []struct {
		name, instance string
		env            env
		enis, addrs    int
	}{
		{"t3.small WARM_ENI_TARGET=1", "t3.small", env{"WARM_ENI_TARGET": "1"}, 1, 3},
		{"t3.small WARM_IP_TARGET=1 MINIMUM_IP_TARGET=1", "t3.small", env{"WARM_IP_TARGET": "1", "MINIMUM_IP_TARGET": "1"}, 1, 1},
		{"t3.small WARM_IP_TARGET=2 MINIMUM_IP_TARGET=5", "t3.small", env{"WARM_IP_TARGET": "2", "MINIMUM_IP_TARGET": "5"}, 2, 5},
		{"p3dn.24xlarge WARM_ENI_TARGET=1", "p3dn.24xlarge", env{"WARM_ENI_TARGET": "1"}, 1, 49},
		{"p3dn.24xlarge WARM_IP_TARGET=5 MINIMUM_IP_TARGET=10", "p3dn.24xlarge", env{"WARM_IP_TARGET": "5", "MINIMUM_IP_TARGET": "10"}, 1, 10},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			n := newNode(t, row.instance, row.env)
			n.converge(5)
			if enis, addrs := simHeld(n.sim); enis != row.enis || addrs != row.addrs {
				t.Errorf("EC2 holds %d ENIs, %d pod addresses; want %d, %d", enis, addrs, row.enis, row.addrs)
			}
			checkAgrees(t, n.sim, n.st)
		})
	}
}

// Pods arriving between passes (Take, as the plugin's ADD) move the pool to
// the row for that many pods.
func TestRowsWithPodsEndToEnd(t *testing.T) {
	rows := []struct {
		name, instance string
		env            env
		pods           int
		enis, addrs    int
	}{
		{"t3.small WARM_ENI_TARGET=1 5 pods", "t3.small", env{"WARM_ENI_TARGET": "1"}, 5, 3, 9},
		{"t3.small WARM_IP_TARGET=1 MINIMUM_IP_TARGET=1 3 pods", "t3.small", env{"WARM_IP_TARGET": "1", "MINIMUM_IP_TARGET": "1"}, 3, 2, 4},
		{"t3.small WARM_IP_TARGET=2 MINIMUM_IP_TARGET=5 5 pods", "t3.small", env{"WARM_IP_TARGET": "2", "MINIMUM_IP_TARGET": "5"}, 5, 3, 7},
		{"p3dn.24xlarge WARM_IP_TARGET=5 MINIMUM_IP_TARGET=10 20 pods", "p3dn.24xlarge", env{"WARM_IP_TARGET": "5", "MINIMUM_IP_TARGET": "10"}, 20, 1, 25},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			n := newNode(t, row.instance, row.env)
			n.converge(5)
			for placed := 0; placed < row.pods; {
				if _, err := n.addPod(); err == nil {
					placed++
					continue
				} else if !errors.Is(err, store.ErrNoFreeAddress) {
					t.Fatalf("take: %v", err)
				}
				n.pods-- // retry the same pod after a pass
				n.converge(5)
			}
			n.converge(5)
			if enis, addrs := simHeld(n.sim); enis != row.enis || addrs != row.addrs {
				t.Errorf("EC2 holds %d ENIs, %d pod addresses; want %d, %d", enis, addrs, row.enis, row.addrs)
			}
			if got := len(n.assignments()); got != row.pods {
				t.Errorf("%d assignments, want %d", got, row.pods)
			}
			checkAgrees(t, n.sim, n.st)
		})
	}
}
