package plugin

import (
	"fmt"
	"time"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"

	"vpc-cni/pool"
	"vpc-cni/rebuild"
	"vpc-cni/reconcile"
	"vpc-cni/store"
)

// status answers whether an ADD can be served now: an address is free, or
// inline grow could get one. It never waits on the reconcile lock.
func (v verbs) status(args *skel.CmdArgs) error {
	c, err := v.begin(args, podArgs{}, "STATUS", func(t Timeouts) Duration { return t.Status })
	if err != nil {
		return err
	}
	defer c.end()
	var node store.Node
	var known bool
	var snap pool.Snapshot
	var s store.Settings
	var v6 store.IPv6Pool
	err = c.store.View(func(tx *store.Tx) (err error) {
		if node, known, err = tx.Node(); err != nil || !known {
			return err
		}
		if s, err = tx.Settings(); err != nil {
			return err
		}
		if v6, _, err = tx.IPv6Pool(); err != nil {
			return err
		}
		snap, err = tx.Snapshot()
		return err
	})
	if isUninitialized(err) || (err == nil && !known) {
		if lost, err := rebuild.Detect(c.store, c.listHost); err == nil && lost.Pods > 0 {
			return unavailable(lost.Message()) // a reconcile rebuilds it too, an ADD under the lock
		}
		return unavailable("the node has not been reconciled yet; run 'vpcctl reconcile'")
	}
	if err != nil {
		return storeErr("reading the pool", err)
	}
	return c.judge(node, s, snap, v6, time.Now())
}

// judge says whether an ADD would get every family the mode gives pods: an
// IPv6 needs the primary ENI's /80 (2^48 addresses: it is there or not;
// only a pass assigns it, never an ADD), an IPv4 a free address or inline
// growth.
func (c *call) judge(node store.Node, s store.Settings, snap pool.Snapshot, v6 store.IPv6Pool, now time.Time) error {
	knobs, err := c.cfg.Knobs(s.Overrides)
	if err != nil {
		return err
	}
	if knobs.Pool.PodIPv6() && !v6.Prefix.IsValid() {
		return unavailable("no IPv6 /80 on the primary ENI yet; the next reconcile pass assigns one")
	}
	if !knobs.Pool.PodIPv4() {
		return nil
	}
	if _, _, _, ok := pool.PickPodAddress(snap, now, knobs.Pool); ok {
		return nil
	}
	if !c.cfg.inlineGrow() {
		return unavailable("no free address and inline grow is off; waiting for the next reconcile")
	}
	if why := reconcile.NoProvisioning(knobs); why != "" {
		return unavailable("no free address, and the pool does not grow: " + why)
	}
	// Would the grow an ADD starts (it waits for an address) get one?
	plan := pool.Compute(pool.Input{Limits: node.Limits, Config: knobs.Pool, Snapshot: snap, Now: now, Waiting: 1})
	for _, a := range plan.Actions {
		if a.Kind == pool.CreateENI || a.Kind == pool.Assign {
			return nil // an ADD would grow the pool inline
		}
	}
	if now.Before(snap.GrowBlockedUntil) {
		return unavailable(fmt.Sprintf("no free address; growth blocked until %s: %s", snap.GrowBlockedUntil.Format(time.RFC3339), snap.GrowBlockedWhy))
	}
	f := plan.Figures
	return unavailable(fmt.Sprintf("no free address and none can be had: %d assigned, %d cooling, %d of %s, max pods %d",
		f.Assigned, f.Cooling, f.ENIs, reconcile.Plural(f.MaxENIs, "ENI", "ENIs"), f.MaxPods))
}

func unavailable(msg string) error {
	return types.NewError(types.ErrPluginNotAvailable, msg, "")
}
