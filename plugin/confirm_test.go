package plugin

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/pkg/types"

	"vpc-cni/pool"
	"vpc-cni/store"
)

// rebuildDuringSetup makes the node's state file a new one while the pod is
// wired, as a rebuild between take and wiring does: the old file moved
// aside, a new one holding the ENIs given (its addresses free) and fill's
// writes. No ENI given: the file is left missing.
func (n *testNode) rebuildDuringSetup(fill func(*store.Tx) error, enis ...string) {
	n.host.duringSetup = func() {
		path := filepath.Join(n.dir, store.DBFile)
		if err := os.Rename(path, path+".aside"); err != nil {
			n.t.Fatal(err)
		}
		if len(enis) == 0 {
			return
		}
		st, err := store.OpenNew(n.dir, store.Options{})
		if err != nil {
			n.t.Fatal(err)
		}
		n.st = st
		n.seed(twoENIs, eni(0, enis...))
		if fill != nil {
			n.update(fill)
		}
	}
}

// The pod wired, the ADD records it in the file a rebuild made meanwhile;
// a file removed meanwhile it leaves missing (a rebuild, which reads the
// kernel first, makes it).
func TestAddRecordsItsPodInAFileRebuiltDuringItsWiring(t *testing.T) {
	n := newTestNode(t).seed(twoENIs, eni(0, "100.64.0.10", "100.64.0.11"))
	n.rebuildDuringSetup(nil, "100.64.0.10", "100.64.0.11")
	if ip := n.add("c1"); ip.String() != "100.64.0.10" {
		t.Fatalf("ADD got %s", ip)
	}
	if a, ok := n.assignment("c1/eth0"); !ok || a.IP.String() != "100.64.0.10" {
		t.Fatalf("the rebuilt file holds %+v (%v) for the wired pod", a, ok)
	}
	if !n.hasEvent(EventRecordedAfterLoss) {
		t.Fatal("no event says the pod was recorded after the rebuild")
	}
	n.rebuildDuringSetup(nil)
	n.add("c2")
	if _, err := os.Stat(filepath.Join(n.dir, store.DBFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the ADD made a state file (%v): only a rebuild, which reads the kernel first, may", err)
	}
	if len(n.host.pods) != 2 {
		t.Fatalf("wired %v: want both pods", n.host.pods)
	}
}

func TestAddUnwiresItsPodWhenTheRebuiltFileCannotRecordIt(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		fill       func(*store.Tx) error
		enis       []string
	}{
		{"the address is not the node's", "not in the pool", nil, []string{"100.64.0.20"}},
		{"another pod holds the address", "already assigned to other/eth0", func(tx *store.Tx) error {
			_, err := tx.Take(store.Assignment{Key: "other/eth0"}, time.Now(), pool.Config{})
			return err
		}, []string{"100.64.0.10"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newTestNode(t).seed(twoENIs, eni(0, "100.64.0.10"))
			n.rebuildDuringSetup(tc.fill, tc.enis...)
			out, err := n.run("ADD", n.args("c1", n.conf("1.1.0", nil)))
			var e *types.Error
			if !errors.As(err, &e) || e.Code != types.ErrTryAgainLater || !strings.Contains(e.Msg, tc.want) || out != "" {
				t.Fatalf("ADD: %q, %v; want code 11 naming %q", out, err, tc.want)
			}
			if len(n.host.pods) != 0 || len(n.host.torn) != 1 {
				t.Fatalf("wired %v, torn down %v: want the pod unwired", n.host.pods, n.host.torn)
			}
			if _, ok := n.assignment("c1/eth0"); ok {
				t.Fatal("the rebuilt file records the pod it refused")
			}
		})
	}
}

// hasEvent reports whether the store holds an event of kind.
func (n *testNode) hasEvent(kind string) bool {
	n.t.Helper()
	var found bool
	err := n.st.View(func(tx *store.Tx) error {
		evs, err := tx.Events(0)
		for _, e := range evs {
			found = found || e.Kind == kind
		}
		return err
	})
	if err != nil {
		n.t.Fatal(err)
	}
	return found
}
