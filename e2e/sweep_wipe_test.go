package e2e

import (
	"os"
	"strings"
	"testing"
	"time"

	"vpc-cni/cloud"
	"vpc-cni/sim/ec2sim"
	"vpc-cni/store"
)

// rm -rf of the state dir while a pass runs (here the test holds that
// pass's lock and has "created" its ENI, not yet attached): the next pass,
// on the directory made anew, neither runs beside it nor, once it may run,
// deletes the young ENI as a leak.
func TestPrivilegedAWipedStateDirKeepsTheLockAndTheYoungENI(t *testing.T) {
	w := newWorld(t, worldOpts{})
	old, err := store.Open(w.stateDir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	unlock, ok, err := old.LockReconcile(false, 0)
	if err != nil || !ok {
		t.Fatalf("taking the reconcile lock: %v %v", ok, err)
	}
	id := w.sim.State().InstanceID
	young, err := w.sim.AddENI(ec2sim.ENISpec{Detached: true, Description: cloud.DescriptionPrefix + id,
		Tags: map[string]string{cloud.TagInstanceID: id, cloud.TagCreatedAt: time.Now().UTC().Format(time.RFC3339)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(w.stateDir); err != nil {
		t.Fatal(err)
	}
	r := w.vpcctl(nil, "reconcile")
	if !strings.Contains(string(r.stderr), "another reconcile holds the lock") {
		t.Fatalf("a pass on the wiped state dir while the old pass holds its lock: %v\n%s%s", r.err, r.stdout, r.stderr)
	}
	unlock()
	w.reconcileUntilSettled()
	if !eniExists(w, young.ID) {
		t.Fatalf("the first pass of the new state file deleted the young ENI %s", young.ID)
	}
}

func eniExists(w *world, id string) bool {
	for _, e := range w.sim.State().ENIs {
		if e.ID == id {
			return true
		}
	}
	return false
}
