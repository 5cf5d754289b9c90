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

// Knobs resolves the pool's knobs now over the overrides the store holds
// (the caller's environment and configuration file, not the last pass's),
// as they apply on node (reconcile.OnNode).
type Knobs func(stored settings.Overrides, node Node) (pool.Config, error)

// TakeForPod is the plugin's ADD transaction, the one rule every taker
// follows (the plugin, the what-if node): in a single transaction it reads
// the overrides and the node, resolves the knobs now (so custom networking
// and the cooldown apply before a pass has seen them), takes the addresses
// the mode gives a pod (pool.Config.Family: the IPv4 at or above the first
// pod device, the IPv6 from the /80, the egress address; all or none, in
// this one transaction: Assignment.IP, IPv6, EgressIP), reports whether the pool is left
// under its free target, claims the background refill if asked to and none
// stands (claimRefill), and counts the ADD. ErrNoFreeAddress when none is
// usable; that outcome is committed too, so metrics count it.
func (s *Store) TakeForPod(want Assignment, now time.Time, knobs Knobs, claimRefill bool) (PodTake, error) {
	var res PodTake
	var takeErr error
	err := s.Update(func(tx *Tx) error {
		var err error
		res, takeErr, err = tx.takeForPod(want, now, knobs)
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
func (t *Tx) takeForPod(want Assignment, now time.Time, knobs Knobs) (res PodTake, takeErr, err error) {
	o, err := t.Overrides()
	if err != nil {
		return res, nil, err
	}
	if res.Node, res.HasNode, err = t.Node(); err != nil {
		return res, nil, err
	}
	cfg, err := knobs(o, res.Node)
	if err != nil {
		return res, nil, err
	}
	first := pool.FirstPodDevice(cfg)
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
	enough, err := t.AvailableAtLeastFrom(pool.FreeTarget(res.Node.Limits, cfg), now, cfg.Cooldown, first)
	if cfg.Profile != "" {
		enough, err = t.ProfileAvailableAtLeast(pool.FreeTarget(res.Node.Limits, cfg), now, cfg.Cooldown, cfg.Profile)
	}
	res.Low = !enough
	if err != nil {
		return res, nil, err
	}
	return res, nil, t.AddCounter(CounterAdds, 1)
}
