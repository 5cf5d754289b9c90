package plugin

import (
	"errors"
	"fmt"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"

	"vpc-cni/netns"
	"vpc-cni/podgc"
	"vpc-cni/pool"
	"vpc-cni/rebuild"
	"vpc-cni/reconcile"
	"vpc-cni/store"
)

// add checks its inputs, then takes an address (growing the pool inline if it is empty), wires the
// pod, makes sure the state file as it is now records it (confirm) and prints the result. A wiring
// failure gives the address back; a pod that cannot be recorded is unwired.
func (v verbs) add(args *skel.CmdArgs) error {
	pod, err := v.admit(args)
	if err != nil {
		return err
	}
	c, err := v.begin(args, pod, "ADD", func(t Timeouts) Duration { return t.Add })
	if err != nil {
		return err
	}
	defer c.end()
	if err := c.refuseDelegatedPolicy(); err != nil {
		return err
	}
	if err := c.pickPool(); err != nil {
		c.log.Warn("refused the pod's pool", "err", err)
		return err
	}
	a, err := c.take()
	if err != nil {
		c.log.Warn("no address", "err", err)
		return err
	}
	c.log.Info("address taken", "ip", a.IP, "ipv6", a.IPv6, "egress", a.EgressIP, "eni", a.ENIID, "profile", a.Profile, "pod", c.pod.Namespace+"/"+c.pod.Name)
	defer c.maybeRefill()
	if c.cfg.Delegate {
		return c.addRules(a)
	}
	return c.wire(a)
}

// addRules is ADD as an IPAM delegate: the interface plugin wires the pod;
// the routing policy that keeps a VPC address on its own ENI is ours.
func (c *call) addRules(a store.Assignment) error {
	for _, ip := range podIPs(a) {
		if err := c.host.SetPodRules(ip, c.podWiring(a).TableFor(ip)); err != nil {
			c.clearRules(a)
			c.giveBack(a)
			return types.NewError(types.ErrInternal, fmt.Sprintf("policy rules for %s: %v", ip, err), "")
		}
	}
	if err := c.confirm(a); err != nil {
		c.clearRules(a)
		return err
	}
	return c.print(ipamResult(c.cfg, a, c.subnet))
}

// wire is ADD as the interface plugin: the pod's wiring, taking another
// address while the kernel says a running pod holds this one.
func (c *call) wire(a store.Assignment) error {
	wired, err := c.host.SetupPod(c.podWiring(a))
	for try := 0; errors.Is(err, netns.ErrAddressInUse) && try < maxInUseRetries; try++ {
		// The store handed out an address a running pod holds (state lost
		// and rebuilt around it): it is that pod's now, and this pod takes
		// another.
		c.log.Warn("address in use by a running pod: recorded as held, taking another", "err", err)
		if a, err = c.retakeInUse(a, err); err != nil {
			return err
		}
		wired, err = c.host.SetupPod(c.podWiring(a))
	}
	if err != nil {
		c.giveBack(a)
		return types.NewError(types.ErrInternal, fmt.Sprintf("wiring pod %s/%s with %s: %v", c.pod.Namespace, c.pod.Name, addrList(a), err), "")
	}
	if err := c.confirm(a); err != nil {
		if terr := c.host.TeardownPod(c.podWiring(a)); terr != nil {
			c.log.Error("unwiring the pod that could not be recorded", "err", terr)
		}
		return err
	}
	if err := c.enforcePolicy(); err != nil {
		c.log.Warn("network policy failed: giving back the wiring and the address", "err", err)
		c.undoWired(a)
		return err
	}
	return c.print(interfaceResult(c.cfg, c.args, a, wired))
}

// maxInUseRetries bounds how many addresses one ADD finds held by running
// pods before it gives up (each is recorded, so the next ADD skips it).
const maxInUseRetries = 3

// retakeInUse records the address the kernel routes to a running pod as
// that pod's (reconcile.HoldInUse) and takes another for this one.
func (c *call) retakeInUse(a store.Assignment, inUse error) (store.Assignment, error) {
	var e *netns.InUseError
	errors.As(inUse, &e)
	err := c.store.Update(func(tx *store.Tx) error { return reconcile.HoldInUse(tx, a.Key, e, c.now()) })
	if err != nil {
		return a, storeErr("recording an address a running pod holds", err)
	}
	return c.take()
}

// take reuses the container's address or takes a free one; an empty pool is
// grown inline when allowed.
func (c *call) take() (store.Assignment, error) {
	want := store.Assignment{Key: c.key(), ContainerID: c.args.ContainerID, IfName: c.args.IfName,
		Network: c.cfg.Network, Netns: c.netns, PodNamespace: c.pod.Namespace, PodName: c.pod.Name,
		PodUID: c.pod.UID, HostVeth: c.hostVeth(), Profile: c.pool.Config.Profile}
	a, err := c.takeOnce(want)
	if !errors.Is(err, store.ErrNoFreeAddress) {
		return a, err
	}
	if !c.cfg.inlineGrow() {
		if c.foreign != nil {
			return a, types.NewError(types.ErrTryAgainLater, c.foreign.Error()+" (inline grow is off: this ADD does not)", "")
		}
		if lost, err := rebuild.Detect(c.store, c.listHost); err == nil && lost.Pods > 0 {
			return a, types.NewError(types.ErrIOFailure, lost.Message()+" (inline grow is off: this ADD does not rebuild it; the next reconcile does)", "")
		}
		return a, c.noAddress("inline grow is off; the next reconcile refills the pool")
	}
	c.wait(want.Key, true)
	defer c.wait(want.Key, false)
	a, reason, err := c.takeGrowing(want)
	if !errors.Is(err, store.ErrNoFreeAddress) {
		return a, err
	}
	return a, c.noAddress(reason)
}

// noAddress is the ADD's "try again later" (code 11): what is full and what
// frees an address when the node is full, else why the pool had none for
// this pod (a failed or late grow). A full node is recorded for events.
func (c *call) noAddress(why string) error {
	full, err := c.fullness()
	if err != nil {
		c.log.Warn("judging whether the node is full", "err", err)
	}
	where := c.pool.Config.Profile.Where()
	if !full.Full || (full.Limit == pool.LimitHostSide && why != "") {
		// Not full, or addresses wait for an ENI's host side: what the grow
		// did (it waited for the link) says more.
		return types.NewError(types.ErrTryAgainLater, "no free address in "+where+"; "+why, "")
	}
	c.markFull(full)
	return types.NewError(types.ErrTryAgainLater, noFree(c.pool.Config.Profile)+": "+full.Message(), "")
}

// noFree opens the message of a full pool: the default pool's is the one
// operators know ("no free address: the node is full: ..."), a profile's
// names the profile.
func noFree(p pool.Pool) string {
	if p == pool.DefaultPool {
		return "no free address"
	}
	return "no free address in " + p.Where()
}

// takeOnce is the store's pod take (store.TakeForPod) for the pod's pool
// as pickPool resolved it: the overrides, the node's facts and the address
// in one transaction, so ADD costs a single open and fsync.
func (c *call) takeOnce(want store.Assignment) (store.Assignment, error) {
	spec := c.pool
	spec.Boot, spec.ConfirmedID = c.bootID(), c.confirmedID
	res, err := c.store.TakeForPod(want, c.now(), spec, c.cfg.backgroundReconcile())
	if res.HasNode {
		c.subnet, c.limits = res.Node.SubnetCIDR, res.Node.Limits
	}
	c.low, c.startRefill = res.Low, res.StartRefill
	if errors.Is(err, store.ErrUnconfirmed) {
		return c.takeUnconfirmed(want, res.Node)
	}
	if errors.Is(err, store.ErrNotInitialized) {
		// No file (a new node, or one removed): no pool to take from. The
		// ADD goes the way of an empty pool: under the reconcile lock a
		// rebuild or a first pass makes the file; no write here does.
		return res.Assignment, store.ErrNoFreeAddress
	}
	if err != nil && !errors.Is(err, store.ErrNoFreeAddress) {
		return res.Assignment, storeErr("taking an address", err)
	}
	return res.Assignment, err
}

// Counters the plugin keeps in the store (vpcctl metrics shows them).
const (
	CounterAdds          = store.CounterAdds
	CounterDels          = "cni_dels"
	CounterNoFreeAddress = store.CounterNoFreeAddress
)

// wait registers (or drops) this ADD as waiting for an address, so that the
// grow pass serves the whole burst at once. The entry expires with the ADD's
// deadline if the process dies.
func (c *call) wait(key string, on bool) {
	deadline, _ := c.ctx.Deadline()
	err := c.store.Update(func(tx *store.Tx) error {
		if on {
			return tx.PutWaiter(key, c.pool.Config.Profile, deadline, c.now())
		}
		return tx.DeleteWaiter(key)
	})
	if err != nil {
		c.log.Warn("recording the waiting ADD", "on", on, "err", err)
	}
}

// giveBack returns the address after a failed wiring.
func (c *call) giveBack(a store.Assignment) {
	err := c.store.Update(func(tx *store.Tx) error {
		_, _, err := tx.Give(a.Key, c.now())
		return err
	})
	if err != nil {
		c.log.Error("giving back the address after a failed ADD", "ip", a.IP, "err", err)
	}
}

func (c *call) podWiring(a store.Assignment) netns.Pod {
	p := podgc.PodOf(a)
	p.NetnsPath, p.IfName, p.MTU = c.netns, c.args.IfName, c.podMTU()
	return p
}

// print writes the result in the configuration's CNI version, as
// types.PrintResult does, to the verbs' output (printResult: the same bytes).
func (c *call) print(r types.Result) error {
	res, err := r.GetAsVersion(c.cfg.CNIVersion)
	if err != nil {
		return err
	}
	return printResult(c.out, res)
}

// fullness judges the pool as it is now for this pod (it is waiting: one
// more than the pool holds free), in one read transaction; the ADD's failure
// path only.
func (c *call) fullness() (pool.Fullness, error) {
	v, err := c.readPool()
	if err != nil || !v.known {
		return pool.Fullness{}, err
	}
	e, err := c.knobs()
	if err != nil {
		return pool.Fullness{}, err
	}
	return pool.Judge(v.node.Limits, c.pool.On(v.node, v.settings.Overrides), v.snap, c.now(), 1, e.NoProvisioning()), nil
}

// markFull records the refused ADD of a full spell (events show its start).
func (c *call) markFull(full pool.Fullness) {
	msg := fmt.Sprintf("pod %s/%s got no address: %s", c.pod.Namespace, c.pod.Name, full.Message())
	err := c.store.Update(func(tx *store.Tx) error { return tx.MarkFull(c.now(), string(full.Limit), msg) })
	if err != nil {
		c.log.Warn("recording the full node", "err", err)
	}
}
