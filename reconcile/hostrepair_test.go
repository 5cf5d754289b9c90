package reconcile

import (
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"vpc-cni/pool"
)

// recordingHost is a ready Host that records its ENI calls in order.
type recordingHost struct {
	readyHost
	mu    sync.Mutex
	calls []string // "setup <eni>" or "teardown <eni>"
}

func (h *recordingHost) SetupENI(e pool.ENI, _ netip.Prefix, _ int) error {
	h.record("setup " + e.ID)
	return nil
}

func (h *recordingHost) TeardownENI(e pool.ENI, _ netip.Prefix) error {
	h.record("teardown " + e.ID)
	return nil
}

func (h *recordingHost) record(call string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, call)
}

// A pass that tears down an ENI to delete it does not set its host side up
// again in its repair of the ENIs that were ready (routes and a rule for an
// ENI EC2 no longer has); the ENI it keeps is repaired as before.
func TestRepairHostsSkipsTheENIThePassDeleted(t *testing.T) {
	n := newNode(t, "t3.small", env{"WARM_IP_TARGET": "5", "RELEASE_DELAY": "1m"})
	n.converge(5)
	n.env["WARM_IP_TARGET"] = "1"
	n.pass() // the excess starts
	n.clock.Advance(2 * time.Minute)
	h := &recordingHost{}
	n.r.Host = h
	n.pass()
	i := slices.IndexFunc(h.calls, func(c string) bool { return len(c) > 9 && c[:9] == "teardown " })
	if i < 0 {
		t.Fatalf("no ENI torn down: %q", h.calls)
	}
	gone := h.calls[i][9:]
	if n.exists(gone) {
		t.Fatalf("%s torn down but not deleted", gone)
	}
	if slices.Contains(h.calls[i:], "setup "+gone) {
		t.Fatalf("the pass set up again the ENI it deleted: %q", h.calls)
	}
}
