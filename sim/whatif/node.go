package whatif

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	"vpc-cni/cloud"
	"vpc-cni/hostnet"
	"vpc-cni/netns"
	"vpc-cni/pool"
	"vpc-cni/reconcile"
	"vpc-cni/settings"
	"vpc-cni/sim/ec2sim"
	"vpc-cni/store"
)

// epoch is where every run's virtual clock starts.
func epoch() time.Time { return time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC) }

// vclock is the virtual clock shared by the runner, the emulator and the host.
type vclock struct{ t time.Time }

func (c *vclock) Now() time.Time { return c.t }

var _ simNode = (*node)(nil)

// slowHost is a reconcile.Host whose new ENIs become usable latency after
// they were first seen: EC2's attach and the kernel's hot-plug.
type slowHost struct {
	clock   *vclock
	latency time.Duration
	seen    map[string]time.Time
}

func (h *slowHost) SetupENI(e pool.ENI, _ netip.Prefix, _ int) error {
	first, ok := h.seen[e.ID]
	if !ok {
		first = h.clock.Now()
		h.seen[e.ID] = first
	}
	if h.clock.Now().Before(first.Add(h.latency)) {
		return fmt.Errorf("%s: not attached yet (usable at %s)", e.ID, first.Add(h.latency).Format(time.TimeOnly))
	}
	return nil
}

func (h *slowHost) TeardownENI(pool.ENI, netip.Prefix) error { return nil }

// PrimaryLink and EnsureNodeRules: the simulated node has no kernel side,
// so passes keep no node-level rules.
func (h *slowHost) PrimaryLink(string) (string, error)               { return "", nil }
func (h *slowHost) EnsureNodeRules(hostnet.Config) ([]string, error) { return nil, nil }
func (h *slowHost) ListPods(string) (netns.HostState, error)         { return netns.HostState{}, nil } // the simulated node runs no real pods

// due is when an ENI seen but not yet usable will be; zero if none.
func (h *slowHost) due() time.Time {
	var at time.Time
	for _, first := range h.seen {
		if t := first.Add(h.latency); t.After(h.clock.Now()) && (at.IsZero() || t.Before(at)) {
			at = t
		}
	}
	return at
}

// node is one emulated node: the emulator, a state dir, the real runner.
type node struct {
	clock  *vclock
	sim    *ec2sim.Sim
	st     *store.Store
	runner *reconcile.Runner
	host   *slowHost
	dir    string
	env    map[string]string
	boot   string // the boot ID the passes confirm the node under, as the plugin reads it
	// passCalls: the EC2 calls the passes made, as their reports list them
	// (the emulator's counters also count the SDK's retries).
	passCalls map[string]int
}

// newNode starts an emulator on loopback and points this process's AWS
// environment at it (runs are sequential), with the state in a temporary
// directory (in /dev/shm when there is one: fsync there costs nothing).
func newNode(env map[string]string, o Options) (*node, error) {
	c := &vclock{t: epoch()}
	sim, err := ec2sim.New(ec2sim.Config{InstanceType: o.InstanceType, Clock: c.Now,
		SubnetCIDR: netip.MustParsePrefix("100.64.0.0/17")})
	if err != nil {
		return nil, err
	}
	sim.SetFaults(ec2sim.Faults{IMDSLag: o.IMDSLag})
	if err := sim.Start("127.0.0.1:0"); err != nil {
		return nil, err
	}
	n := &node{clock: c, sim: sim, env: env, boot: reconcile.BootID(), passCalls: map[string]int{}, host: &slowHost{clock: c, latency: o.ENILatency, seen: map[string]time.Time{}}}
	for _, kv := range sim.Env() {
		k, v, _ := strings.Cut(kv, "=")
		os.Setenv(k, v)
	}
	n.dir, err = os.MkdirTemp(tmpBase(), "vpc-cni-whatif-")
	if err == nil {
		n.st, err = store.OpenNew(n.dir, store.Options{})
	}
	var cl *cloud.Client
	if err == nil {
		cl, err = cloud.New(context.Background(), cloud.Options{MaxBackoff: time.Millisecond, HTTPTimeout: 10 * time.Second})
	}
	if err != nil {
		n.close()
		return nil, err
	}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	names := func() []string { return slices.Collect(maps.Keys(env)) }
	n.runner = &reconcile.Runner{Store: n.st, Cloud: cl, Host: n.host, Env: lookup, Names: names, Now: c.Now,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	return n, nil
}

func tmpBase() string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		return "/dev/shm"
	}
	return ""
}

func (n *node) close() {
	_ = n.sim.Close()
	if n.dir != "" {
		_ = os.RemoveAll(n.dir)
	}
}

// simNode is one node as a run drives it: the real reconcile against the
// emulator (node), or the policy model on an in-memory pool (modelNode).
type simNode interface {
	vclock() *vclock
	// pass runs one reconcile pass; every EC2 call takes a token from acct.
	pass(growOnly bool, acct *Account) (passResult, error)
	take(key string, p pool.Pool) (ok, low bool, err error)
	wait(key string, p pool.Pool, on bool) error
	give(key string) error
	idle() (idle, enis int, err error)
	due() time.Time // when an ENI seen but not yet usable will be; zero if none
	counters() map[string]int
	resetCounters()
	close()
}

// passResult is what a run needs to know of a pass.
type passResult struct {
	empty      bool          // planned nothing and nothing failed
	throttled  int           // calls the account refused
	undone     int           // calls whose work was undone: a create whose attach was throttled, and its delete
	noBudget   int           // calls the node's budget did not let out before the deadline
	budgetWait time.Duration // time the pass's calls waited for the node's budget
}

func (n *node) vclock() *vclock          { return n.clock }
func (n *node) due() time.Time           { return n.host.due() }
func (n *node) counters() map[string]int { return n.sim.Counters() }
func (n *node) resetCounters()           { n.sim.ResetCounters(); n.passCalls = map[string]int{} }

// pass runs one reconcile pass at the current virtual time. One node never
// empties the account's buckets, so the calls are counted afterwards.
func (n *node) pass(growOnly bool, acct *Account) (passResult, error) {
	rep, err := n.runner.Run(context.Background(), reconcile.Options{GrowOnly: growOnly})
	if err != nil {
		return passResult{}, fmt.Errorf("reconcile at +%s: %w", n.clock.Now().Sub(epoch()), err)
	}
	res := passResult{empty: rep.Plan.Empty() && len(rep.Failed) == 0}
	for _, c := range rep.Calls {
		n.passCalls[c]++
		if !acct.Take(c, n.clock.t) {
			res.throttled++
		}
	}
	return res, nil
}

// take gives key an address of pool p through the plugin's own ADD
// transaction, the pool resolved now from the node's environment as the
// plugin resolves it; ok false if none is free. low reports that the pool
// is under its free target afterwards.
func (n *node) take(key string, p pool.Pool) (ok, low bool, err error) {
	e, err := settings.Resolve(settings.Overrides{}, settings.Inputs{Env: n.runner.Env, Names: n.runner.Names})
	if err != nil {
		return false, false, err
	}
	spec, known := e.Spec(p)
	if !known {
		return false, false, fmt.Errorf("pod %s picks profile %s, which the node does not have", key, p)
	}
	in := store.PodPoolOf(spec)
	in.Boot = n.boot
	res, err := n.st.TakeForPod(store.Assignment{Key: key}, n.clock.Now(), in, false) // the run coalesces refills itself
	if isNoFree(err) {
		return false, false, nil
	}
	return err == nil, res.Low, err
}

// wait registers key as an ADD waiting for pool p (or drops it).
func (n *node) wait(key string, p pool.Pool, on bool) error {
	now := n.clock.Now()
	return n.st.Update(func(tx *store.Tx) error {
		if on {
			return tx.PutWaiter(key, p, now.Add(time.Hour), now)
		}
		return tx.DeleteWaiter(key)
	})
}

func (n *node) give(key string) error {
	return n.st.Update(func(tx *store.Tx) error { _, _, err := tx.Give(key, n.clock.Now()); return err })
}

// idle is the addresses the node holds that no pod uses, and its ENIs.
func (n *node) idle() (idle, enis int, err error) {
	var snap pool.Snapshot
	err = n.st.View(func(tx *store.Tx) (err error) { snap, err = tx.Snapshot(); return err })
	if isUninit(err) {
		return 0, 0, nil
	}
	for _, e := range snap.ENIs {
		for _, b := range e.Blocks {
			if b.Releasing {
				continue
			}
			for _, a := range b.Addrs {
				if a.State != pool.Assigned {
					idle++
				}
			}
		}
	}
	return idle, len(snap.ENIs), err
}
