package plugin

import (
	"errors"
	"fmt"
	"time"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"

	"vpc-cni/pool"
	"vpc-cni/rebuild"
	"vpc-cni/reconcile"
	"vpc-cni/store"
)

// status answers "can this node start pods": it fails (code 50) only when
// no pod could start because of the node's setup (never reconciled, lost
// state not yet rebuilt, no IPv6 /80 yet, an invalid configuration). A full
// or busy node answers success and its ADDs fail with code 11 naming what is
// full: containerd 2.x turns a STATUS error into a NotReady node, and the
// node lifecycle controller then evicts every pod on it. It never waits on
// the reconcile lock.
func (v verbs) status(args *skel.CmdArgs) error {
	c, err := v.begin(args, podArgs{}, "STATUS", func(t Timeouts) Duration { return t.Status })
	if err != nil {
		return err
	}
	defer c.end()
	pv, err := c.readPool()
	if isUninitialized(err) || (err == nil && !pv.known) {
		if lost, err := rebuild.Detect(c.store, c.listHost); err == nil && lost.Pods > 0 {
			return unavailable(lost.Message()) // a reconcile rebuilds it too, an ADD under the lock
		}
		return unavailable("the node has not been reconciled yet; run 'vpcctl reconcile'")
	}
	if err != nil {
		return storeErr("reading the pool", err)
	}
	if err := c.statusIdentity(pv.node); err != nil {
		return err
	}
	return c.judge(pv, time.Now())
}

// poolView is what STATUS and a refused ADD judge the node by.
type poolView struct {
	node     store.Node
	known    bool
	settings store.Settings
	snap     pool.Snapshot
	v6       store.IPv6Pool
	last     store.ReconcileReport // the last pass's outcome
}

// readPool reads the node's pool in one transaction.
func (c *call) readPool() (v poolView, err error) {
	err = c.store.View(func(tx *store.Tx) (err error) {
		if v.node, v.known, err = tx.Node(); err != nil || !v.known {
			return err
		}
		if v.settings, err = tx.Settings(); err != nil {
			return err
		}
		if v.v6, _, err = tx.IPv6Pool(); err != nil {
			return err
		}
		if v.last, _, err = tx.ReconcileReport(); err != nil {
			return err
		}
		v.snap, err = tx.Snapshot()
		return err
	})
	return v, err
}

// judge fails only for the node's setup: the knobs must resolve, IPv6 pods
// need the primary ENI's /80 (2^48 addresses: it is there or not; only a
// pass assigns it, never an ADD), and IPv4 pods a pool that holds or can get
// an address. A node that holds addresses, none free, is full: that is load,
// logged here and shown by pool status, metrics and doctor.
func (c *call) judge(v poolView, now time.Time) error {
	knobs, err := c.cfg.Knobs(v.settings.Overrides)
	if err != nil {
		return unavailable(cniMessage(err))
	}
	if knobs.Pool.PodIPv6() && !v.v6.Prefix.IsValid() {
		return unavailable("no IPv6 /80 on the primary ENI yet; the next reconcile pass assigns one")
	}
	full := pool.Judge(v.node.Limits, pool.OnNode(knobs.Pool, v.node.PrefixCapable), v.snap, now, 0, knobs.NoProvisioning())
	if why := cannotServe(full, v.last); why != "" && !knobs.Pool.IPv4Off && !c.podsRun(v.snap) {
		// Never served and cannot: no pod of ours runs here to evict.
		return unavailable("no pod address on the node and none can be had: " + why)
	}
	if full.Full {
		c.log.Info("ready, but full: ADDs fail with code 11 until an address frees", "limit", full.Limit, "why", full.Message())
	}
	return nil
}

// cannotServe is why a node that holds no pod address cannot get one ("" if
// it holds one or may get one): the policy finds no way to grow, or the last
// pass was refused by EC2 for a cause the next one meets again (a missing
// IAM action, a full subnet, a limit), so the grow the plan wants will not
// happen. A throttle or an unreachable endpoint passes: it is not the node's.
func cannotServe(full pool.Fullness, last store.ReconcileReport) string {
	switch {
	case full.Held > 0:
		return ""
	case full.Full:
		return full.Message()
	case last.Error != "" && reconcile.RefusesGrowth(last.Cause):
		return fmt.Sprintf("EC2 refused the last reconcile pass (%s, %s): %s", last.Cause,
			last.Time.UTC().Format(time.RFC3339), last.Error)
	}
	return ""
}

// podsRun reports whether any pod may run here: an address of any pool is
// assigned, or the kernel routes to a live pod's veth (a pod of a state the
// store lost). A STATUS error would make the node NotReady and evict them.
func (c *call) podsRun(snap pool.Snapshot) bool {
	for _, e := range snap.ENIs {
		for _, b := range e.Blocks {
			for _, a := range b.Addrs {
				if a.State == pool.Assigned {
					return true
				}
			}
		}
	}
	hs, err := c.listHost()
	if err != nil {
		c.log.Warn("reading the pods' wiring; STATUS counts the node as serving", "err", err)
		return true
	}
	return hs.RunningPods() > 0
}

// cniMessage is a CNI error's message, or err's text.
func cniMessage(err error) string {
	var e *types.Error
	if errors.As(err, &e) {
		return e.Msg
	}
	return err.Error()
}

func unavailable(msg string) error {
	return types.NewError(types.ErrPluginNotAvailable, msg, "")
}
