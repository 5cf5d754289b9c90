package plugin

import (
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"

	"vpc-cni/netns"
	"vpc-cni/podgc"
	"vpc-cni/store"
)

// del tears the pod's wiring down, then gives its address back (to cool
// down before reuse). It succeeds when things are already gone: DEL twice,
// DEL without ADD, DEL after the namespace was deleted. Inputs ADD refuses
// name nothing that was ever set up, so DEL of them succeeds and touches
// nothing; a CNI_NETNS that ADD refuses (the node's own namespace, a file)
// is treated as gone, so the node is never unwired as if it were the pod.
func (v verbs) del(args *skel.CmdArgs) error {
	pod, inputErr := checkInput(args)
	c, err := v.begin(args, pod, "DEL", func(t Timeouts) Duration { return t.Del })
	if err != nil {
		return err
	}
	defer c.end()
	if inputErr != nil {
		c.log.Warn("DEL of inputs ADD refuses: nothing was set up for them", "err", inputErr)
		return nil
	}
	if args.Netns != "" {
		if err := v.podNetns(args.Netns); err != nil {
			c.log.Warn("the pod's namespace is gone or unusable; tearing down the node side only", "err", err)
			c.netns = ""
		}
	}
	a, found, waiting, err := c.assignmentOrWaiter()
	if err != nil {
		return err
	}
	if !found && c.noStateFile() {
		// No state file: a rebuild may be reading the kernel right now, and
		// would restore this pod's wiring after we remove it. Under the
		// reconcile lock no rebuild runs; look again (it may have finished).
		unlock := c.lockForDel()
		defer unlock()
		if a, found, waiting, err = c.assignmentOrWaiter(); err != nil {
			return err
		}
	}
	if err := c.unwire(a, found); err != nil {
		return types.NewError(types.ErrInternal, fmt.Sprintf("tearing down %s: %v", c.key(), err), "")
	}
	if !found {
		// The agent knows pods by name: a sandbox that holds nothing (a late
		// DEL of an earlier one) must not drop the live pod's policy.
		c.log.Info("nothing assigned; nothing to release")
		if waiting {
			return c.dropWaiter()
		}
		return nil
	}
	c.forgetPolicy()
	return c.release(a.Key)
}

// dropWaiter removes the waiting entry an ADD killed while it waited for
// an inline grow left for this sandbox: its pod is gone, and until the
// dead ADD's deadline the entry would make growth (and status's shortfall)
// count a pod that will never come.
func (c *call) dropWaiter() error {
	err := c.store.Update(func(tx *store.Tx) error { return tx.DeleteWaiter(c.key()) })
	if err != nil && !isUninitialized(err) {
		return storeErr("dropping the waiting entry of "+c.key(), err)
	}
	return nil
}

// unwire removes what ADD set up on the node that routes to the pod: its
// routes, neighbours and rules as the interface plugin (the veth pair goes
// with the namespace the runtime deletes next), the policy rules as an IPAM
// delegate.
func (c *call) unwire(a store.Assignment, found bool) error {
	if !c.cfg.Delegate {
		return c.host.DetachPod(c.teardownSpec(a, found))
	}
	if found {
		return c.clearRules(a)
	}
	return nil
}

// clearRules removes the policy rules of each of the pod's addresses (an
// IPAM delegate's), going on after an error so that none is left behind
// needlessly; the first error is returned.
func (c *call) clearRules(a store.Assignment) error {
	var first error
	for _, ip := range podIPs(a) {
		if err := c.host.ClearPodRules(ip); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (c *call) assignment() (a store.Assignment, found bool, err error) {
	a, found, _, err = c.assignmentOrWaiter()
	return a, found, err
}

// assignmentOrWaiter reads the sandbox's assignment and, in the same
// transaction, whether a killed ADD left a waiting entry for it.
func (c *call) assignmentOrWaiter() (a store.Assignment, found, waiting bool, err error) {
	err = c.store.View(func(tx *store.Tx) (err error) {
		if a, found, err = tx.Assignment(c.key()); err != nil || found {
			return err
		}
		waiting = tx.Waiter(c.key())
		a, found, err = c.rebuiltAssignment(tx)
		return err
	})
	if isUninitialized(err) {
		return a, false, false, nil
	}
	if err != nil {
		return a, false, false, storeErr("reading the assignment", err)
	}
	return a, found, waiting, nil
}

// noStateFile reports whether the state file is missing (lost, or a new
// node's): one stat, on the DEL path only when no assignment was found.
func (c *call) noStateFile() bool {
	err := c.store.View(func(*store.Tx) error { return nil })
	return isUninitialized(err)
}

// lockForDel takes the reconcile lock within the DEL's deadline; without it
// (a pass holding it too long) the DEL goes on.
func (c *call) lockForDel() func() {
	deadline, _ := c.ctx.Deadline()
	unlock, held, err := c.store.LockReconcile(true, time.Until(deadline)/2)
	if err != nil || !held {
		c.log.Warn("DEL on a missing state file without the reconcile lock", "err", err)
		return func() {}
	}
	return unlock
}

// rebuiltAssignment is this sandbox's address as a rebuild kept it when no
// CNI cache entry named the pod (rebuild.Restore, reconcile.HoldInUse: key
// "unknown-<host veth>"): the same host veth and the same namespace are the
// same sandbox, so its DEL releases it instead of leaving it held.
func (c *call) rebuiltAssignment(tx *store.Tx) (store.Assignment, bool, error) {
	if c.args.Netns == "" {
		return store.Assignment{}, false, nil
	}
	a, ok, err := tx.Assignment(store.AssignmentKey("unknown-"+c.hostVeth(), c.args.IfName))
	if err != nil || !ok || !sameNetns(a.Netns, c.args.Netns) {
		return store.Assignment{}, false, err
	}
	return a, true, nil
}

// sameNetns reports whether two paths name one live network namespace
// (/run/netns/x and /var/run/netns/x, or a /proc path, are the same one).
func sameNetns(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	ia, errA := os.Stat(a)
	ib, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(ia, ib)
}

func (c *call) release(key string) error {
	err := c.store.Update(func(tx *store.Tx) error {
		if _, found, err := tx.Give(key, c.now()); err != nil || !found {
			return err
		}
		// None normally: the ADD that took the address dropped it. The key
		// released may be an unknown pod's hold on this sandbox's veth
		// (rebuiltAssignment), and the waiting entry is this sandbox's.
		for _, k := range []string{key, c.key()} {
			if err := tx.DeleteWaiter(k); err != nil {
				return err
			}
		}
		return tx.AddCounter(CounterDels, 1)
	})
	if err != nil {
		return storeErr("releasing "+key, err)
	}
	c.log.Info("address released", "key", key)
	return nil
}

// teardownSpec says what to remove: from the assignment, else from the
// prevResult the runtime cached, else what the kernel routes through this
// sandbox's veths (netns.DetachPod).
func (c *call) teardownSpec(a store.Assignment, found bool) netns.Pod {
	if found {
		p := podgc.PodOf(a)
		p.NetnsPath, p.IfName = c.netns, c.args.IfName
		return p
	}
	p := netns.Pod{NetnsPath: c.netns, IfName: c.args.IfName, HostVeth: c.hostVeth(),
		Sandbox: netns.Sandbox{Network: c.cfg.Network, ContainerID: c.args.ContainerID, IfName: c.args.IfName}}
	p.IP, p.IP6 = prevIPs(c.cfg.PrevResult)
	return p
}

// prevIPs are the pod's IPv4 and IPv6 in the prevResult the runtime
// cached (each invalid when absent). Egress addresses are never listed
// there (interfaceResult), so the first of each family is the pod's.
func prevIPs(r types.Result) (v4, v6 netip.Addr) {
	if r == nil {
		return v4, v6
	}
	res, err := current.NewResultFromResult(r)
	if err != nil {
		return v4, v6
	}
	for _, ipc := range res.IPs {
		ip, ok := netip.AddrFromSlice(ipc.Address.IP)
		switch ip = ip.Unmap(); {
		case !ok:
		case ip.Is4() && !v4.IsValid():
			v4 = ip
		case ip.Is6() && !v6.IsValid():
			v6 = ip
		}
	}
	return v4, v6
}
