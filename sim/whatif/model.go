package whatif

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"time"

	"vpc-cni/cloud"
	"vpc-cni/pool"
	"vpc-cni/reconcile"
	"vpc-cni/settings"
	"vpc-cni/sim/ec2sim"
)

// modelNode is one node without bbolt, HTTP or the emulator: its pool is an
// in-memory pool.Snapshot, a pass is pool.Compute on it with the calls a
// real pass makes (reconcile.Run): the read step's DescribeNetworkInterfaces
// when the IMDS steady state cannot spare it (first read, IMDS still lagging
// behind this node's last change, confirming a call whose outcome was
// unknown, the jittered safety net, or every pass with
// VPC_CNI_EC2_RESYNC_INTERVAL=0), one call per action (three to create an
// ENI, two to delete one, with a Describe first when the pass read IMDS), and
// the leaked-ENI sweep. EC2 applies what a call asks at once; a call the
// account refuses fails its action and ends the pass's calls (the real pass
// stops at throttling), and the next pass plans it again. A throttled call
// is EC2's word that it did nothing, so it needs no confirming Describe and
// leaves no intent (reconcile's answered and settled); a new ENI whose
// attach is throttled is deleted. A pass plans every pool the node serves;
// ADD takes an address of the pod's pool as the store does
// (pool.PickPodAddress). IMDS shows a change imdsLag after it: nobody else
// changes the node's ENIs.
type modelNode struct {
	clock    *vclock
	id       string
	limits   pool.Limits
	cfg      settings.Effective
	latency  time.Duration
	snap     pool.Snapshot
	seen     map[string]time.Time // ENI → first seen by a pass (usable latency later)
	waiters  map[string]pool.Pool // waiting ADDs, by key: their pool
	pd       bool                 // the instance can hold /28 prefixes
	calls    map[string]int
	nextAddr netip.Addr
	nextENI  int

	lastDescribe, lastSweep time.Time
	lastChange              time.Time     // this node's last change in EC2
	imdsLag                 time.Duration // IMDS shows a change this long after it

	budget    *nodeBudget   // the node's client-side EC2 budget
	late      time.Duration // how long this pass has waited for the budget so far
	backoff   Backoff       // growth's back-off after EC2 throttled it
	throttles int           // throttled growth passes in a row
}

// newModelNode is a node of o's instance type with the knobs of env.
func newModelNode(id string, env map[string]string, o Options) (*modelNode, error) {
	enis, perENI, hypervisor, ok := ec2sim.TypeLimits(o.InstanceType)
	if !ok {
		return nil, fmt.Errorf("instance type %q is not in the emulator's table", o.InstanceType)
	}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	names := func() []string { return slices.Collect(maps.Keys(env)) }
	cfg, err := settings.Resolve(settings.Overrides{}, settings.Inputs{Env: lookup, Names: names})
	if err != nil {
		return nil, err
	}
	pd := cloud.PrefixCapable(hypervisor)
	cfg.Pool = pool.OnNode(cfg.Pool, pd) // as a pass does
	budget, err := newNodeBudget(env)
	if err != nil {
		return nil, err
	}
	c := &vclock{t: epoch()}
	n := &modelNode{clock: c, id: id, limits: pool.Limits{MaxENIs: enis, IPv4PerENI: perENI}, cfg: cfg,
		latency: o.ENILatency, imdsLag: o.IMDSLag, seen: map[string]time.Time{}, waiters: map[string]pool.Pool{}, pd: pd, calls: map[string]int{},
		nextAddr: netip.MustParseAddr("100.64.0.16"), budget: budget, backoff: o.ThrottleBackoff}
	n.snap.ENIs = []pool.ENI{{ID: n.eniID(), DeviceIndex: 0, Ready: true, CreatedAt: c.t}}
	return n, nil
}

var _ simNode = (*modelNode)(nil)

func (n *modelNode) vclock() *vclock          { return n.clock }
func (n *modelNode) counters() map[string]int { return n.calls }
func (n *modelNode) resetCounters()           { n.calls = map[string]int{} }
func (n *modelNode) close()                   {}

func (n *modelNode) eniID() string {
	n.nextENI++
	return fmt.Sprintf("eni-%s-%d", n.id, n.nextENI)
}

// Outcomes of a call.
const (
	callOK        = iota
	callThrottled // the account refused it: RequestLimitExceeded
	callNoBudget  // the node's budget had no token before the deadline: not sent
)

// call makes one EC2 call: a token of the node's budget (waiting for it as
// the client does, so the call goes out later in the pass), then one of the
// account's. The pass's changes still take effect at its start.
func (n *modelNode) call(action string, acct *Account, res *passResult) int {
	wait, ok := n.budget.take(action, n.clock.t.Add(n.late), passDeadline-n.late)
	if !ok {
		res.noBudget++
		return callNoBudget
	}
	n.late += wait
	res.budgetWait += wait
	n.calls[action]++
	if !acct.Take(action, n.clock.t.Add(n.late)) {
		res.throttled++
		return callThrottled
	}
	return callOK
}

func (n *modelNode) pass(growOnly bool, acct *Account) (passResult, error) {
	var res passResult
	now := n.clock.t
	n.late = 0
	imds := n.cfg.EC2Resync > 0
	if !imds || n.lastDescribe.IsZero() || now.Sub(n.lastChange) < n.imdsLag ||
		!now.Before(reconcile.ResyncDue(n.id, n.lastDescribe, n.cfg.EC2Resync)) {
		if n.call("DescribeNetworkInterfaces", acct, &res) != callOK {
			return res, nil // the pass fails; the next one reads again
		}
		n.lastDescribe, imds = now, false
	}
	actions := n.plan(now)
	if growOnly {
		actions = slices.DeleteFunc(actions, func(a pool.Action) bool { return a.Kind != pool.CreateENI && a.Kind != pool.Assign })
	}
	if imds && slices.ContainsFunc(actions, func(a pool.Action) bool { return a.Kind == pool.DeleteENI }) {
		if n.call("DescribeNetworkInterfaces", acct, &res) != callOK {
			return res, nil
		}
	}
	failed := false
	for _, a := range actions {
		if !n.apply(a, acct, &res) {
			failed = true
			break
		}
		n.lastChange = now
	}
	n.setupHosts()
	if !growOnly && now.Sub(n.lastSweep) >= reconcile.LeakSweepEvery {
		n.lastSweep = now
		n.call("DescribeNetworkInterfaces", acct, &res)
	}
	res.empty = len(actions) == 0 && !failed
	return res, nil
}

// plan is every served pool's plan (pool.ComputePools, as a pass plans),
// each pool's excess timer kept; it returns their actions in order.
func (n *modelNode) plan(now time.Time) []pool.Action {
	waiting := map[pool.Pool]int{}
	for _, p := range n.waiters {
		waiting[p]++
	}
	pools := pool.Pools(n.cfg.PoolConfigs(), n.snap, n.pd)
	var actions []pool.Action
	for _, plan := range pool.ComputePools(pool.Input{Limits: n.limits, Snapshot: n.snap, Now: now}, pools, waiting) {
		t := pool.TimersOf(n.snap, plan.Figures.Profile)
		t.ExcessSince = plan.ExcessSince
		n.snap.SetTimers(plan.Figures.Profile, t)
		actions = append(actions, plan.Actions...)
	}
	return actions
}

// apply makes an action's calls and, when they all succeed, what they do.
func (n *modelNode) apply(a pool.Action, acct *Account, res *passResult) bool {
	if !n.makeCalls(a, acct, res) {
		return false
	}
	if a.Kind == pool.CreateENI || a.Kind == pool.Assign {
		n.throttles = 0
	}
	n.effect(a)
	return true
}

// actionCalls are the EC2 calls reconcile makes for an action of kind k.
func actionCalls(k pool.ActionKind) []string {
	switch k {
	case pool.CreateENI:
		return []string{"CreateNetworkInterface", "AttachNetworkInterface", "ModifyNetworkInterfaceAttribute"}
	case pool.Assign:
		return []string{"AssignPrivateIpAddresses"}
	case pool.Unassign:
		return []string{"UnassignPrivateIpAddresses"}
	case pool.DeleteENI:
		return []string{"DetachNetworkInterface", "DeleteNetworkInterface"}
	}
	return nil
}

// makeCalls makes a's calls in order; false at the first that fails, after
// what reconcile does then (undo a create whose attach failed, back off).
func (n *modelNode) makeCalls(a pool.Action, acct *Account, res *passResult) bool {
	for _, c := range actionCalls(a.Kind) {
		out := n.call(c, acct, res)
		if out == callOK {
			continue
		}
		switch c {
		case "ModifyNetworkInterfaceAttribute":
			continue // not fatal: the next pass that reads EC2 sets it (not modelled)
		case "AttachNetworkInterface":
			res.undone++ // the create, undone by the delete
			if n.call("DeleteNetworkInterface", acct, res) == callOK {
				res.undone++
			}
		}
		if out == callThrottled && (a.Kind == pool.CreateENI || a.Kind == pool.Assign) {
			n.backOff()
		}
		return false
	}
	return true
}

// effect is what a's calls, all answered, do to the node's ENIs.
func (n *modelNode) effect(a pool.Action) {
	now := n.clock.t
	switch a.Kind {
	case pool.CreateENI:
		e := pool.ENI{ID: n.eniID(), DeviceIndex: a.DeviceIndex, CreatedAt: now, Blocks: n.blocks(a, now), Profile: a.Profile}
		n.snap.ENIs = append(n.snap.ENIs, e)
		slices.SortFunc(n.snap.ENIs, func(x, y pool.ENI) int { return x.DeviceIndex - y.DeviceIndex })
	case pool.Assign:
		e := n.eni(a.ENIID)
		e.Blocks = append(e.Blocks, n.blocks(a, now)...)
	case pool.Unassign:
		e := n.eni(a.ENIID)
		e.Blocks = slices.DeleteFunc(e.Blocks, func(b pool.Block) bool { return slices.Contains(a.Release, b.CIDR) })
	case pool.DeleteENI:
		n.snap.ENIs = slices.DeleteFunc(n.snap.ENIs, func(e pool.ENI) bool { return e.ID == a.ENIID })
	}
}

// backOff holds growth back after EC2 throttled it, as reconcile does
// (the store's GrowBlockedUntil, which pool.Compute honours).
func (n *modelNode) backOff() {
	if until := n.backoff.Until(n.id, n.clock.t, n.throttles); !until.IsZero() {
		n.snap.GrowBlockedUntil = until
	}
	n.throttles++
}

func (n *modelNode) eni(id string) *pool.ENI {
	for i := range n.snap.ENIs {
		if n.snap.ENIs[i].ID == id {
			return &n.snap.ENIs[i]
		}
	}
	panic("model: plan names an ENI the node does not have: " + id)
}

// blocks are the action's new addresses or /28 prefixes, never used before.
func (n *modelNode) blocks(a pool.Action, now time.Time) []pool.Block {
	bits := 32
	if a.Prefixes {
		bits = 28
		for n.nextAddr != netip.PrefixFrom(n.nextAddr, bits).Masked().Addr() {
			n.nextAddr = n.nextAddr.Next()
		}
	}
	var out []pool.Block
	for range a.Count {
		p := netip.PrefixFrom(n.nextAddr, bits)
		out = append(out, reconcile.NewBlock(p, now))
		for range 1 << (32 - bits) {
			n.nextAddr = n.nextAddr.Next()
		}
	}
	return out
}

// setupHosts makes ENIs usable latency after a pass first saw them.
func (n *modelNode) setupHosts() {
	now := n.clock.t
	for i := range n.snap.ENIs {
		e := &n.snap.ENIs[i]
		if e.Ready {
			continue
		}
		first, ok := n.seen[e.ID]
		if !ok {
			first = now
			n.seen[e.ID] = now
		}
		e.Ready = !now.Before(first.Add(n.latency))
		if e.Ready {
			delete(n.seen, e.ID)
		}
	}
}

func (n *modelNode) due() time.Time {
	var at time.Time
	for _, first := range n.seen {
		if t := first.Add(n.latency); t.After(n.clock.t) && (at.IsZero() || t.Before(at)) {
			at = t
		}
	}
	return at
}

// take gives key an address of pool p as the plugin does: the pool's spec
// resolved, then the store's pick for it.
func (n *modelNode) take(key string, p pool.Pool) (ok, low bool, err error) {
	spec, known := n.cfg.Spec(p)
	if !known {
		return false, false, fmt.Errorf("pod %s picks profile %s, which the node does not have", key, p)
	}
	now := n.clock.t
	e, b, a, ok := pool.PickPodAddress(n.snap, now, spec.Pool)
	if !ok {
		return false, false, nil
	}
	addr := &n.snap.ENIs[e].Blocks[b].Addrs[a]
	addr.State, addr.Since, addr.Owner = pool.Assigned, now, key
	return true, n.usable(now, p) < pool.FreeTarget(n.limits, spec.Pool), nil
}

// usable counts the addresses of pool p that ADD could hand out now.
func (n *modelNode) usable(now time.Time, p pool.Pool) int {
	c := 0
	for _, e := range n.snap.ENIs {
		if !e.ServesPool(p) {
			continue
		}
		for _, b := range e.Blocks {
			for _, a := range b.Addrs {
				if e.Ready && !b.Releasing && a.State != pool.Assigned && pool.Usable(a, now, n.cfg.Pool.Cooldown) {
					c++
				}
			}
		}
	}
	return c
}

func (n *modelNode) wait(key string, p pool.Pool, on bool) error {
	if on {
		n.waiters[key] = p
	} else {
		delete(n.waiters, key)
	}
	return nil
}

func (n *modelNode) give(key string) error {
	for i := range n.snap.ENIs {
		for j := range n.snap.ENIs[i].Blocks {
			for k := range n.snap.ENIs[i].Blocks[j].Addrs {
				a := &n.snap.ENIs[i].Blocks[j].Addrs[k]
				if a.State == pool.Assigned && a.Owner == key {
					a.State, a.Since, a.Owner = pool.Cooling, n.clock.t, ""
					return nil
				}
			}
		}
	}
	return nil
}

func (n *modelNode) idle() (idle, enis int, err error) {
	for _, e := range n.snap.ENIs {
		for _, b := range e.Blocks {
			for _, a := range b.Addrs {
				if !b.Releasing && a.State != pool.Assigned {
					idle++
				}
			}
		}
	}
	return idle, len(n.snap.ENIs), nil
}
