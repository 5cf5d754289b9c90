package e2e

import (
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containernetworking/cni/pkg/types"

	"vpc-cni/pool"
	"vpc-cni/store"
)

// A c5.4xlarge (8 ENIs x 30 addresses) with 100 warm addresses; cooldown 0
// so the second round can reuse what the first freed.
var hundredWarm = worldOpts{instanceType: "c5.4xlarge", env: []string{"WARM_IP_TARGET=100", "IP_COOLDOWN_PERIOD=0"}}

// 100 parallel ADD processes on 100 free addresses (inline grow off), then
// 100 parallel DELs: distinct addresses, a consistent store, a clean node.
// Then 120 parallel ADDs with inline grow on: each succeeds or fails with
// code 11 and a reason, and no address is handed out twice.
func TestPrivilegedConcurrentAddDel(t *testing.T) {
	w := newWorld(t, hundredWarm)
	if free := w.countState(pool.Free); free != 100 {
		t.Fatalf("pool holds %d free addresses, want 100", free)
	}
	noGrow := mustJSON(t, w.conf(map[string]any{"inlineGrow": false}))
	pods := w.newPods("burst", 100)
	adds := w.parallel(pods, "ADD", noGrow)
	seen := map[netip.Addr]string{}
	for i, r := range adds {
		ip := addrOf(t, resultOf(t, r).IPs[0].Address.IP)
		if other, dup := seen[ip]; dup {
			t.Fatalf("%s handed to %s and %s", ip, other, pods[i].id)
		}
		seen[ip] = pods[i].id
	}
	w.checkStore()
	for i, r := range w.parallel(pods, "DEL", noGrow) {
		if r.err != nil {
			t.Errorf("DEL %s: %v %s", pods[i].id, r.err, r.stdout)
		}
	}
	w.assertNodeClean()
	if n := w.countState(pool.Assigned); n != 0 {
		t.Errorf("%d addresses still assigned", n)
	}

	grow := mustJSON(t, w.conf(nil))
	more := append(pods, w.newPods("rush", 20)...)
	for i := range pods {
		more[i] = w.repod(pods[i])
	}
	w.sim.ResetCounters()
	// The 100 free addresses are there for the taking, so at least 100 of
	// the 120 ADDs must succeed; the other 20 depend on the inline grow.
	if ok := w.assertOversubscribed(more, w.parallel(more, "ADD", grow)); ok < 100 {
		t.Errorf("%d of 120 ADDs succeeded with 100 free addresses and inline grow on; want at least 100", ok)
	}
	// ADDs queued on the reconcile lock take what the first grow pass
	// added instead of each running a pass: one EC2 call per ENI at most.
	c := w.sim.Counters()
	if n := c["AssignPrivateIpAddresses"] + c["CreateNetworkInterface"]; n > 8 {
		t.Errorf("%d address/ENI calls for one burst on an 8-ENI node: ADDs grew the pool one by one", n)
	}
}

// assertOversubscribed checks every run succeeded with a distinct address or
// failed with code 11 and a reason, and returns how many succeeded.
func (w *world) assertOversubscribed(pods []*pod, runs []run) int {
	w.tb.Helper()
	seen := map[netip.Addr]bool{}
	ok := 0
	for i, r := range runs {
		if r.err != nil {
			if e := cniError(w.tb, r); e.Code != types.ErrTryAgainLater || strings.TrimSpace(e.Msg) == "" {
				w.tb.Errorf("ADD %s failed with code %d %q, want 11 and a reason", pods[i].id, e.Code, e.Msg)
			}
			continue
		}
		ip := addrOf(w.tb, resultOf(w.tb, r).IPs[0].Address.IP)
		if seen[ip] {
			w.tb.Fatalf("%s handed out twice", ip)
		}
		seen[ip] = true
		ok++
	}
	if n := len(w.assignments()); n != ok {
		w.tb.Errorf("%d assignments for %d successful ADDs", n, ok)
	}
	w.tb.Logf("%d ADDs on 100 free addresses with inline grow: %d succeeded", len(runs), ok)
	w.checkStore()
	return ok
}

// newPods makes n pods named prefix-i.
func (w *world) newPods(prefix string, n int) []*pod {
	pods := make([]*pod, n)
	for i := range pods {
		pods[i] = w.newPod(fmt.Sprintf("%s-%d", prefix, i))
	}
	return pods
}

// repod is a new sandbox (container ID) in p's netns, as after a restart.
func (w *world) repod(p *pod) *pod {
	q := *p
	q.id = fmt.Sprintf("c%04d-%s", w.pods.Add(1), p.name)
	return &q
}

// parallel runs one plugin process per pod, all at once.
func (w *world) parallel(pods []*pod, verb string, conf []byte) []run {
	defer func(start time.Time) { w.tb.Logf("%d %s in %v", len(pods), verb, time.Since(start)) }(time.Now())
	runs := make([]run, len(pods))
	var wg sync.WaitGroup
	for i, p := range pods {
		wg.Go(func() { runs[i] = w.cni(verb, p, conf) })
	}
	wg.Wait()
	return runs
}

// countState counts the store's addresses in state s.
func (w *world) countState(s pool.State) int {
	var snap pool.Snapshot
	w.view(func(tx *store.Tx) (err error) { snap, err = tx.Snapshot(); return err })
	n := 0
	for _, e := range snap.ENIs {
		for _, b := range e.Blocks {
			for _, a := range b.Addrs {
				if a.State == s {
					n++
				}
			}
		}
	}
	return n
}
