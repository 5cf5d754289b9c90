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
	"vpc-cni/settings"
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
	_, _ = c.cfg.knobFile() // read now, not inside take's transaction (which holds the store's lock); Knobs reports its error
	if err := c.refuseDelegatedPolicy(); err != nil {
		return err
	}
	if err := c.pickProfile(); err != nil {
		c.log.Warn("refused the pod's profile", "err", err)
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
		PodUID: c.pod.UID, HostVeth: c.hostVeth(), Profile: c.profile}
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
	where := "the pool"
	if c.profile != "" {
		where = "profile " + c.profile + "'s pool"
	}
	if !full.Full || (full.Limit == pool.LimitHostSide && why != "") {
		// Not full, or addresses wait for an ENI's host side: what the grow
		// did (it waited for the link) says more.
		return types.NewError(types.ErrTryAgainLater, "no free address in "+where+"; "+why, "")
	}
	c.markFull(full)
	if c.profile != "" {
		return types.NewError(types.ErrTryAgainLater, "no free address in "+where+": "+full.Message(), "")
	}
	return types.NewError(types.ErrTryAgainLater, "no free address: "+full.Message(), "")
}

// takeOnce is the store's pod take (store.TakeForPod): the overrides, the
// knobs resolved now and the node's subnet in one transaction, so ADD costs a
// single open and fsync.
func (c *call) takeOnce(want store.Assignment) (store.Assignment, error) {
	knobs := func(o settings.Overrides, node store.Node) (pool.Config, error) {
		if node.InstanceID != "" && !c.trusted(node) {
			return pool.Config{}, unconfirmed{node} // rolls the take back
		}
		e, err := c.cfg.Knobs(o)
		if p, ok := e.Profile(c.profile); ok && c.profile != "" {
			return reconcile.OnNode(p.Pool, node), err
		}
		return reconcile.OnNode(e.Pool, node), err
	}
	res, err := c.store.TakeForPod(want, c.now(), knobs, c.cfg.backgroundReconcile())
	if res.HasNode {
		c.subnet, c.limits = res.Node.SubnetCIDR, res.Node.Limits
	}
	c.low, c.startRefill = res.Low, res.StartRefill
	var u unconfirmed
	if errors.As(err, &u) {
		return c.takeUnconfirmed(want, u.node)
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
			return tx.PutProfileWaiter(key, c.profile, deadline, c.now())
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
// types.PrintResult does, to the verbs' output.
func (c *call) print(r types.Result) error {
	res, err := r.GetAsVersion(c.cfg.CNIVersion)
	if err != nil {
		return err
	}
	return res.PrintTo(c.out)
}

// fullness judges the pool as it is now for this pod (it is waiting: one
// more than the pool holds free), in one read transaction; the ADD's failure
// path only.
func (c *call) fullness() (pool.Fullness, error) {
	v, err := c.readPool()
	if err != nil || !v.known {
		return pool.Fullness{}, err
	}
	knobs, err := c.cfg.Knobs(v.settings.Overrides)
	if err != nil {
		return pool.Fullness{}, err
	}
	if p, ok := knobs.Profile(c.profile); ok && c.profile != "" {
		return reconcile.ProfileFullness(v.node, knobs, p, v.snap, c.now(), 1), nil
	}
	return reconcile.Fullness(v.node, knobs, v.snap, c.now(), 1), nil
}

// markFull records the refused ADD of a full spell (events show its start).
func (c *call) markFull(full pool.Fullness) {
	msg := fmt.Sprintf("pod %s/%s got no address: %s", c.pod.Namespace, c.pod.Name, full.Message())
	err := c.store.Update(func(tx *store.Tx) error { return tx.MarkFull(c.now(), string(full.Limit), msg) })
	if err != nil {
		c.log.Warn("recording the full node", "err", err)
	}
}
