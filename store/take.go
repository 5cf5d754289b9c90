package store

import (
	"errors"
	"time"

	"vpc-cni/pool"
	"vpc-cni/settings"
)

// Counters the pod take keeps (vpcctl metrics shows them). **contract**
const (
	CounterAdds          = "cni_adds"
	CounterNoFreeAddress = "cni_adds_without_free_address"
)

// PodTake is what TakeForPod found and did.
type PodTake struct {
	Assignment Assignment
	Node       Node // the node identity read in the same transaction (zero before the first pass)
	HasNode    bool
	// Low: the pool is under its free target afterwards, or had no address.
	Low bool
	// StartRefill: Low, and this ADD claimed the background refill (asked
	// for with claimRefill): the caller starts the detached pass.
	StartRefill bool
}

// PodPool is what an ADD resolves before its take: the pod's pool as the
// environment and the configuration file give it, and what vouches for the
// node. The take applies the rest from the file itself (TakeSpec.On).
type PodPool struct {
	// Config: the pod's pool's configuration, resolved over no stored
	// override; Config.Profile names the pool.
	Config pool.Config
	// Overridable: the overrides `vpcctl pool warm` stores set this pool's
	// targets (the default pool's, and a profile's that sets none).
	Overridable bool
	// Boot: this boot's ID; ConfirmedID: an instance this process
	// confirmed with IMDS. A node vouched for by neither is not used.
	Boot, ConfirmedID string
}

// PodPoolOf is the take's view of a pool spec as settings resolved it.
func PodPoolOf(spec settings.Profile) PodPool {
	return PodPool{Config: spec.Pool, Overridable: !spec.OwnTargets}
}

// On is the pool's configuration as it applies on node under the stored
// overrides: what the take and the ADD's fullness judge with. Pure.
func (p PodPool) On(node Node, o settings.Overrides) pool.Config {
	c := p.Config
	if p.Overridable {
		for _, f := range []struct{ dst, v *int }{{&c.WarmIPTarget, o.WarmIP}, {&c.MinIPTarget, o.MinIP},
			{&c.WarmENITarget, o.WarmENI}, {&c.WarmPrefixTarget, o.WarmPrefix}} {
			if f.v != nil {
				*f.dst = *f.v
			}
		}
	}
	return pool.OnNode(c, node.PrefixCapable)
}

// ErrUnconfirmed: the state file's node was not confirmed in this boot nor
// by this process; the take is rolled back until IMDS says who this is.
var ErrUnconfirmed = errors.New("the state file's node is not confirmed for this boot")

// TakeForPod is the plugin's ADD transaction, the one rule every taker
// follows (the plugin, the what-if node): in a single transaction it reads
// the overrides and the node, checks the node is vouched for, applies the
// overrides to the pod's pool (PodPool.On), takes the addresses the mode
// gives a pod (pool.Config.Family: the IPv4 from its pool at or above the
// first pod device, the IPv6 from the /80, the egress address; all or none:
// Assignment.IP, IPv6, EgressIP), reports whether the pool is left under its
// free target, claims the background refill if asked to and none stands
// (claimRefill), and counts the ADD. ErrNoFreeAddress when none is usable;
// that outcome is committed too, so metrics count it. It calls nothing
// outside the store and the policy.
func (s *Store) TakeForPod(want Assignment, now time.Time, p PodPool, claimRefill bool) (PodTake, error) {
	var res PodTake
	var takeErr error
	err := s.Update(func(tx *Tx) error {
		var err error
		res, takeErr, err = tx.takeForPod(want, now, p)
		if err == nil && claimRefill && res.Low {
			res.StartRefill, err = tx.claimRefill(now)
		}
		return err
	})
	if err == nil {
		err = takeErr
	}
	return res, err
}

// takeForPod is TakeForPod's body; takeErr is ErrNoFreeAddress, which must
// not roll the transaction back, err anything else.
func (t *Tx) takeForPod(want Assignment, now time.Time, p PodPool) (res PodTake, takeErr, err error) {
	o, err := t.Overrides()
	if err != nil {
		return res, nil, err
	}
	if res.Node, res.HasNode, err = t.Node(); err != nil {
		return res, nil, err
	}
	if res.Node.InstanceID != "" && !res.Node.VouchedFor(p.Boot, p.ConfirmedID) {
		return res, nil, ErrUnconfirmed
	}
	cfg := p.On(res.Node, o)
	res.Assignment, takeErr = t.takeFamilies(want, now, cfg)
	if errors.Is(takeErr, ErrNoFreeAddress) {
		res.Low = true
		return res, takeErr, t.AddCounter(CounterNoFreeAddress, 1)
	}
	if takeErr != nil {
		return res, nil, takeErr
	}
	if err := t.endFullSpell(now); err != nil {
		return res, nil, err
	}
	enough, err := t.AvailableAtLeast(pool.FreeTarget(res.Node.Limits, cfg), now, cfg)
	res.Low = !enough
	if err != nil {
		return res, nil, err
	}
	return res, nil, t.AddCounter(CounterAdds, 1)
}
