package plugin

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/types"

	"vpc-cni/internal/testsupport/simtest"
	"vpc-cni/pool"
	"vpc-cni/reconcile"
	"vpc-cni/settings"
	"vpc-cni/sim/ec2sim"
	"vpc-cni/store"
)

// growNode is a node on the EC2 emulator whose store has never been
// reconciled. MAX_ENI=1 keeps every pass on the primary ENI, so inline grow
// never sets up a secondary ENI's host side (root's work, in netns/).
func growNode(t *testing.T) (*testNode, *ec2sim.Sim) {
	sim := simtest.Start(t, ec2sim.Config{InstanceType: "t3.small"}) // 3 ENIs of 4 addresses
	t.Setenv(settings.MaxENI, "1")
	t.Setenv(settings.WarmIPTarget, "1")
	return newTestNode(t), sim
}

func (n *testNode) addGrowing(id string) (string, error) {
	return n.run("ADD", n.args(id, n.conf("1.1.0", growOn)))
}

// The first ADD on a node that no reconcile has seen grows the pool inline:
// it learns the node, assigns an address on the primary ENI and takes it.
func TestAddOnAnEmptyPoolGrowsItInline(t *testing.T) {
	n, sim := growNode(t)
	out, err := n.addGrowing("c1")
	if err != nil {
		t.Fatal(err)
	}
	ip := resultIP(t, out)
	primary := sim.State().ENIs[0]
	if !slices.Contains(primary.Secondary, ip) {
		t.Fatalf("ADD got %s; the emulator's primary ENI holds %v", ip, primary.Secondary)
	}
	a, ok := n.assignment("c1/eth0")
	if !ok || a.IP != ip || a.ENIID != primary.ID || n.host.pods[ip].Table != 0 {
		t.Fatalf("assignment %+v, wired %+v", a, n.host.pods[ip])
	}
	// Each look at the empty pool counts (before the reconcile lock and under it).
	if n.counter(CounterNoFreeAddress) == 0 || n.counter(CounterAdds) != 1 {
		t.Fatalf("counters: adds %d, without address %d", n.counter(CounterAdds), n.counter(CounterNoFreeAddress))
	}
	var waiting int
	n.update(func(tx *store.Tx) (err error) { waiting, err = waitingDefault(tx); return err })
	if waiting != 0 {
		t.Fatalf("%d waiting ADDs left behind", waiting)
	}
}

// When the primary ENI is full and MAX_ENI forbids another, ADD says why.
func TestAddWhenInlineGrowCannotGrowSaysWhy(t *testing.T) {
	n, sim := growNode(t)
	var got []string
	for i := range 3 {
		out, err := n.addGrowing(fmt.Sprintf("c%d", i))
		if err != nil {
			t.Fatalf("ADD %d of the 3 the primary ENI holds: %v", i, err)
		}
		got = append(got, resultIP(t, out).String())
	}
	_, err := n.addGrowing("c3")
	wantCode(t, err, types.ErrTryAgainLater, "no free address: the node is full: 1 ENI of 1 in use, every address held (3 assigned, 0 cooling)")
	if _, ok := n.assignment("c3/eth0"); ok || len(n.host.pods) != 3 {
		t.Fatalf("the refused ADD left state: pods %v", n.host.pods)
	}
	if held := sim.State().ENIs; len(held) != 1 || len(held[0].Secondary) != 3 {
		t.Fatalf("emulator holds %+v, want the primary ENI with the 3 addresses %v", held, got)
	}
}

func TestWhyNoGrowthExplainsFromTheFigures(t *testing.T) {
	cases := []struct {
		rep  reconcile.Report
		want string
	}{
		{reconcile.Report{Failed: []string{"AssignPrivateIpAddresses: throttled", "x"}}, "AssignPrivateIpAddresses: throttled; x"},
		{reconcile.Report{Plan: pool.Plan{Figures: pool.Figures{Free: 0, Assigned: 4, Waiting: 2}}}, "(0 free, 4 assigned, 0 cooling, 2 waiting)"},
	}
	for _, c := range cases {
		if got := whyNoGrowth(&c.rep, ""); !strings.Contains(got, c.want) {
			t.Errorf("whyNoGrowth(%+v) = %q, want %q", c.rep.Plan.Figures, got, c.want)
		}
	}
}

// An ADD that waits for the reconcile lock to grow the pool says so in its
// log at once: which lock file, held by whom, until when.
func TestAddWaitingForTheReconcileLockLogsIt(t *testing.T) {
	n, _ := growNode(t)
	unlock, ok, err := n.st.LockReconcile(false, 0)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	defer unlock()
	short := map[string]any{"inlineGrow": true, "timeouts": map[string]any{"add": "1s"}}
	_, err = n.run("ADD", n.args("c1", n.conf("1.1.0", short)))
	wantCode(t, err, types.ErrTryAgainLater, "could not take the reconcile lock in time")
	log, rerr := os.ReadFile(filepath.Join(n.dir, "plugin.log"))
	line := ""
	for _, l := range strings.Split(string(log), "\n") {
		if strings.Contains(l, `msg="waiting for the reconcile lock"`) {
			line = l
		}
	}
	holder := fmt.Sprintf(`holder="pid %d since `, os.Getpid())
	if rerr != nil || !strings.Contains(line, " path="+n.st.OuterLockPath()+" ") || !strings.Contains(line, holder) ||
		!strings.Contains(line, " deadline=") {
		t.Errorf("the log says:\n%s\nwant the wait's line with the path, %s and the deadline", log, holder)
	}
}
