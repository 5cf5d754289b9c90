package e2e

import (
	"fmt"
	"testing"

	"vpc-cni/pool"
)

// poolRow is one row of the pool table: with the targets set and
// `vpcctl reconcile` run between pods, the node holds these ENIs and
// addresses at each pod count. t3.small = 3 ENIs x 4 IPv4, p3dn.24xlarge =
// 15 x 50.
type poolRow struct {
	name, instanceType string
	targets            []string
	pods               []int
	enis, held, unused []int
}

// fastBudget lifts the node's client-side EC2 budget (2 calls a second of
// each kind): the long rows reconcile after each of up to 95 pods, far
// faster than a timer would.
const fastBudget = "VPC_CNI_EC2_DESCRIBE_RATE=500"
const fastMutations = "VPC_CNI_EC2_MUTATING_RATE=500"

var poolRows = []poolRow{
	{"t3.small/WARM_ENI=1", "t3.small", []string{"WARM_ENI_TARGET=1"},
		[]int{0, 5, 9}, []int{1, 3, 3}, []int{3, 9, 9}, []int{3, 4, 0}},
	{"t3.small/WARM_IP=1,MIN=1", "t3.small", []string{"WARM_IP_TARGET=1", "MINIMUM_IP_TARGET=1"},
		[]int{0, 5, 9}, []int{1, 2, 3}, []int{1, 6, 9}, []int{1, 1, 0}},
	{"t3.small/WARM_IP=2,MIN=5", "t3.small", []string{"WARM_IP_TARGET=2", "MINIMUM_IP_TARGET=5"},
		[]int{0, 5, 9}, []int{2, 3, 3}, []int{5, 7, 9}, []int{5, 2, 0}},
	{"p3dn.24xlarge/WARM_ENI=1", "p3dn.24xlarge", []string{"WARM_ENI_TARGET=1", fastBudget, fastMutations},
		[]int{0, 3, 95}, []int{1, 2, 3}, []int{49, 98, 147}, []int{49, 95, 52}},
	{"p3dn.24xlarge/WARM_IP=5,MIN=10", "p3dn.24xlarge", []string{"WARM_IP_TARGET=5", "MINIMUM_IP_TARGET=10", fastBudget, fastMutations},
		[]int{0, 7, 15, 45}, []int{1, 1, 1, 2}, []int{10, 12, 20, 50}, []int{10, 5, 5, 5}},
}

// Every row of the pool table holds with pods added through the plugin
// (inline grow and background reconcile off, so only the reconcile passes
// between pods move the pool).
func TestPrivilegedPoolTableRows(t *testing.T) {
	for _, row := range poolRows {
		t.Run(row.name, func(t *testing.T) {
			w := newWorld(t, worldOpts{instanceType: row.instanceType, env: row.targets})
			conf := mustJSON(t, w.conf(map[string]any{"inlineGrow": false}))
			pods := 0
			for i, want := range row.pods {
				for ; pods < want; pods++ {
					w.add(w.newPod(fmt.Sprintf("row-%d", pods)), conf)
					w.reconcileUntilSettled(row.targets...)
				}
				w.assertPool(pods, row.enis[i], row.held[i], row.unused[i])
			}
			w.checkStore()
		})
	}
}

// assertPool compares EC2's view (the emulator) and the store's with a row.
func (w *world) assertPool(pods, enis, held, unused int) {
	w.tb.Helper()
	gotENIs, gotHeld := 0, 0
	for _, e := range w.sim.State().ENIs {
		if e.Status == "in-use" {
			gotENIs++
			gotHeld += len(e.Secondary)
		}
	}
	free, assigned := w.countState(pool.Free), w.countState(pool.Assigned)
	if gotENIs != enis || gotHeld != held || gotHeld-pods != unused || free != unused || assigned != pods {
		w.tb.Errorf("%d pods: EC2 shows %d ENIs holding %d addresses (%d unused); store %d free, %d assigned; want %d ENIs, %d held, %d unused",
			pods, gotENIs, gotHeld, gotHeld-pods, free, assigned, enis, held, unused)
	}
}
