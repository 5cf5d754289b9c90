package reconcile

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
	"vpc-cni/internal/testsupport/simtest"

	"vpc-cni/cloud"
	"vpc-cni/pool"
	"vpc-cni/sim/ec2sim"
	"vpc-cni/store"
)

// clock is a controllable Runner.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// readyHost is a Host whose ENIs are always ready (the kernel side is tested
// by netns/ and the plugin tests).
type readyHost struct{}

func (readyHost) SetupENI(pool.ENI, netip.Prefix, int) error { return nil }
func (readyHost) TeardownENI(pool.ENI, netip.Prefix) error   { return nil }

// env is a settings.Lookup over a map the test may change between passes.
type env map[string]string

func (e env) lookup(k string) (string, bool) { v, ok := e[k]; return v, ok }

// node is one emulated EC2 node with its state dir and a runner wired as
// commands.newRunner does, but with a ready Host and a test clock.
type node struct {
	t     testing.TB
	sim   *ec2sim.Sim
	st    *store.Store
	r     *Runner
	clock *clock
	env   env
	pods  int // keys handed out by addPod
}

// startSim runs an emulator on loopback and points the AWS environment at it.
func startSim(t testing.TB, instanceType string) *ec2sim.Sim {
	t.Helper()
	return startSimConfig(t, ec2sim.Config{InstanceType: instanceType})
}

func startSimConfig(t testing.TB, cfg ec2sim.Config) *ec2sim.Sim { return simtest.Start(t, cfg) }

// newNode starts a fresh emulated node of the given type.
func newNode(t testing.TB, instanceType string, e env) *node {
	t.Helper()
	sim := startSim(t, instanceType)
	return attachNode(t, sim, t.TempDir(), e)
}

// attachNode builds a runner for an existing sim and state dir.
func attachNode(t testing.TB, sim *ec2sim.Sim, dir string, e env) *node {
	t.Helper()
	st, err := store.OpenNew(dir, store.Options{})
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	cl, err := cloud.New(context.Background(), cloud.Options{MaxBackoff: time.Millisecond, HTTPTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("cloud.New: %v", err)
	}
	if e == nil {
		e = env{}
	}
	c := newClock()
	n := &node{t: t, sim: sim, st: st, clock: c, env: e}
	n.r = &Runner{Store: st, Cloud: cl, Host: readyHost{}, Env: e.lookup, Now: c.Now}
	return n
}

func ctxFor(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// pass runs one reconcile pass and fails the test on error.
func (n *node) pass() *Report {
	n.t.Helper()
	rep, err := n.r.Run(ctxFor(n.t), Options{})
	if err != nil {
		n.t.Fatalf("reconcile: %v (failed: %v)", err, rep.Failed)
	}
	return rep
}

// converge runs passes until one plans nothing; at most max passes.
func (n *node) converge(max int) int {
	n.t.Helper()
	for i := 1; i <= max; i++ {
		if rep := n.pass(); rep.Plan.Empty() && len(rep.Failed) == 0 {
			return i
		}
	}
	n.t.Fatalf("no empty plan after %d passes; store: %s", max, n.storeSummary())
	return 0
}

// simHeld counts the instance's attached ENIs and pod addresses in EC2.
var simHeld = simtest.Held

func (n *node) snapshot() pool.Snapshot {
	n.t.Helper()
	var snap pool.Snapshot
	if err := n.st.View(func(tx *store.Tx) (err error) { snap, err = tx.Snapshot(); return err }); err != nil {
		n.t.Fatalf("snapshot: %v", err)
	}
	return snap
}

func (n *node) storeSummary() string {
	var b strings.Builder
	for _, e := range n.snapshot().ENIs {
		fmt.Fprintf(&b, "[%s dev %d ready %v blocks %d] ", e.ID, e.DeviceIndex, e.Ready, len(e.Blocks))
	}
	return b.String()
}

// addPod takes an address for a new pod as the plugin's ADD does.
func (n *node) addPod() (store.Assignment, error) {
	n.pods++
	return n.takeFor(fmt.Sprintf("pod%04d/eth0", n.pods))
}

// takeFor takes an address for the pod key (again, for a pod that waited).
func (n *node) takeFor(key string) (store.Assignment, error) {
	var got store.Assignment
	err := n.st.Update(func(tx *store.Tx) (err error) {
		got, err = tx.Take(store.Assignment{Key: key}, n.clock.Now(), pool.Config{Cooldown: n.cooldown()})
		return err
	})
	return got, err
}

// delPod frees a pod's address as the plugin's DEL does.
func (n *node) delPod(key string) {
	n.t.Helper()
	err := n.st.Update(func(tx *store.Tx) error { _, _, err := tx.Give(key, n.clock.Now()); return err })
	if err != nil {
		n.t.Fatalf("give %s: %v", key, err)
	}
}

func (n *node) cooldown() time.Duration {
	if v, ok := n.env["IP_COOLDOWN_PERIOD"]; ok {
		if d, err := time.ParseDuration(v); err == nil {
			return d
		}
	}
	return pool.DefaultCooldown
}

func (n *node) assignments() []store.Assignment {
	n.t.Helper()
	var as []store.Assignment
	if err := n.st.View(func(tx *store.Tx) (err error) { as, err = tx.Assignments(); return err }); err != nil {
		n.t.Fatalf("assignments: %v", err)
	}
	return as
}

// checkAgrees fails unless the emulator and the store agree: every ENI in
// EC2 is attached to the node and known to the store, every address EC2
// gives an ENI is in the store on that ENI and the reverse, no intent is left
// in flight, every assignment's address is held as assigned by its owner,
// and the store's own consistency check passes.
func checkAgrees(t testing.TB, sim *ec2sim.Sim, st *store.Store) {
	t.Helper()
	var snap pool.Snapshot
	var intents []store.Intent
	var as []store.Assignment
	err := st.View(func(tx *store.Tx) (err error) {
		if snap, err = tx.Snapshot(); err != nil {
			return err
		}
		if intents, err = tx.Intents(); err != nil {
			return err
		}
		if as, err = tx.Assignments(); err != nil {
			return err
		}
		return tx.Check()
	})
	if err != nil {
		t.Fatalf("store: %v", err)
	}
	if len(intents) > 0 {
		t.Errorf("%d intents left in flight: %+v", len(intents), intents)
	}
	ours := map[string]map[netip.Prefix]pool.Block{}
	owner := map[netip.Addr]string{}
	for _, e := range snap.ENIs {
		ours[e.ID] = map[netip.Prefix]pool.Block{}
		for _, b := range e.Blocks {
			ours[e.ID][b.CIDR] = b
			for _, a := range b.Addrs {
				if a.State == pool.Assigned {
					owner[a.IP] = a.Owner
				}
			}
		}
	}
	for _, e := range sim.State().ENIs {
		blocks, known := ours[e.ID]
		if e.DeviceIndex < 0 || !known {
			t.Errorf("leaked ENI %s: status %s, device %d, known to the store %v", e.ID, e.Status, e.DeviceIndex, known)
			continue
		}
		delete(ours, e.ID)
		for _, cidr := range simBlocks(e) {
			if _, ok := blocks[cidr]; !ok {
				t.Errorf("EC2 gives %s to %s; the store does not know it", cidr, e.ID)
			}
			delete(blocks, cidr)
		}
		for cidr := range blocks {
			t.Errorf("the store holds %s on %s; EC2 does not", cidr, e.ID)
		}
	}
	for id := range ours {
		t.Errorf("the store holds ENI %s; EC2 has no such attached ENI", id)
	}
	for _, a := range as {
		if owner[a.IP] != a.Key {
			t.Errorf("assignment %s has %s, held in the pool by %q", a.Key, a.IP, owner[a.IP])
		}
		delete(owner, a.IP)
	}
	for ip, o := range owner {
		t.Errorf("%s is assigned to %s, which has no assignment", ip, o)
	}
}

func simBlocks(e ec2sim.ENI) []netip.Prefix {
	var out []netip.Prefix
	for _, ip := range e.Secondary {
		if ip != e.PrimaryIP {
			out = append(out, netip.PrefixFrom(ip, 32))
		}
	}
	return append(out, e.Prefixes...)
}

// mutating counts the EC2 calls that change something.
func mutating(counts map[string]int) int {
	n := 0
	for k, v := range counts {
		if !strings.HasPrefix(k, "Describe") && !strings.HasPrefix(k, "IMDS") {
			n += v
		}
	}
	return n
}

func fmtV(v any) string { return fmt.Sprintf("%+v", v) }
