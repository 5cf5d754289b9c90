package e2e

import (
	"fmt"
	"testing"

	"vpc-cni/pool"
)

// poolRow is one row of the pool issue's table on a t3.small (3 ENIs x 4
// IPv4): with the targets set and `vpcctl reconcile` run between pods, the
// node holds these ENIs and addresses at 0, 5 and 9 pods.
type poolRow struct {
	name    string
	targets []string
	enis    [3]int
	held    [3]int
	unused  [3]int
}

var podCounts = [3]int{0, 5, 9}

var t3SmallRows = []poolRow{
	{"WARM_ENI=1", []string{"WARM_ENI_TARGET=1"}, [3]int{1, 3, 3}, [3]int{3, 9, 9}, [3]int{3, 4, 0}},
	{"WARM_IP=1,MIN=1", []string{"WARM_IP_TARGET=1", "MINIMUM_IP_TARGET=1"}, [3]int{1, 2, 3}, [3]int{1, 6, 9}, [3]int{1, 1, 0}},
	{"WARM_IP=2,MIN=5", []string{"WARM_IP_TARGET=2", "MINIMUM_IP_TARGET=5"}, [3]int{2, 3, 3}, [3]int{5, 7, 9}, [3]int{5, 2, 0}},
}

// Every t3.small row of the pool table holds with pods added through the
// plugin (inline grow and background reconcile off, so only the reconcile
// passes between pods move the pool).
func TestPoolTableRows(t *testing.T) {
	for _, row := range t3SmallRows {
		t.Run(row.name, func(t *testing.T) {
			w := newWorld(t, worldOpts{instanceType: "t3.small", env: row.targets})
			conf := mustJSON(t, w.conf(map[string]any{"inlineGrow": false}))
			pods := 0
			for i, want := range podCounts {
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
