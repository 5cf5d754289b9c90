package status

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"vpc-cni/internal/usage"
	"vpc-cni/pool"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// storedState is what status reads from the store, in one transaction.
type storedState struct {
	node     store.Node
	known    bool
	snap     pool.Snapshot
	settings store.Settings
	waiting  map[pool.Pool]int // by pool
	last     *store.ReconcileReport
	meta     store.PoolMeta
}

// Load reads the store and computes the figures with the knobs as
// this invocation resolves them (in: its environment and the file).
func Load(st *store.Store, in settings.Inputs, now time.Time) (PoolStatus, error) {
	s := PoolStatus{StateDir: st.Dir(), ENIs: []ENIStatus{}, NotOurs: []NotOursStatus{}, Pending: []pool.Action{}, Knobs: []KnobStatus{}, Pods: []PodStatus{},
		Profiles: []ProfileStatus{}}
	if in.File != nil {
		s.ConfigFile = in.File.Path
	}
	var ss storedState
	err := st.View(func(tx *store.Tx) (err error) { ss, err = readState(tx, &s, now); return err })
	if err != nil && !errors.Is(err, store.ErrNotInitialized) {
		return s, err
	}
	cfg, err := settings.Resolve(ss.settings.Overrides, in)
	if err != nil {
		return s, usage.Wrap(err)
	}
	s.Knobs = Knobs(cfg.Values, ss.settings.LastPass)
	if ss.last, err = lastOrRefused(st, ss.last); err != nil {
		return s, err
	}
	if ss.last != nil {
		s.LastReconcile = lastPass(*ss.last)
	}
	if !ss.known {
		return s, nil
	}
	s.Initialized, s.Node = true, nodeStatus(ss.node)
	rules := NodeRules(ss.node, ss.snap, in)
	s.NodeRules = &rules
	s.EC2Reads = ec2Reads(ss.node, ss.meta, cfg.EC2Resync)
	pools := pool.Pools(cfg.PoolConfigs(), ss.snap, ss.node.PrefixCapable)
	plans := pool.ComputePools(pool.Input{Limits: ss.node.Limits, Snapshot: ss.snap, Now: now}, pools, ss.waiting)
	plan := plans[0]
	s.Figures = plan.Figures
	full := pool.Judge(ss.node.Limits, pools[0], ss.snap, now, ss.waiting[pool.DefaultPool], cfg.NoProvisioning())
	s.Full = &full
	s.growth(ss, plan, cfg, now)
	if cfg.Pool.PrefixDelegation && now.Before(ss.snap.NoPrefixesUntil) {
		s.NoPrefixes = ss.snap.NoPrefixesUntil.Format(time.RFC3339)
	}
	s.ENIs = s.enis(ss.snap, cfg.Pool.Cooldown, now)
	s.NotOurs = notOursStatus(ss.snap, ss.node.Limits, cfg.Pool)
	s.Excess = excessStatus(plan, cfg.Pool.ReleaseDelay)
	s.Shortfall = shortfallStatus(plan, ss.snap, s.ENIs, now)
	s.Profiles = profilesStatus(ss, cfg, pools[1:], plans[1:], now)
	s.IPv6, err = loadIPv6(st, cfg.Pool, now)
	return s, err
}

// lastOrRefused is the newer of the stored last pass and a pass refused
// because EC2's answer contradicted the node (kept outside state.db).
func lastOrRefused(st *store.Store, last *store.ReconcileReport) (*store.ReconcileReport, error) {
	refused, ok, err := st.RefusedPass()
	if err != nil || !ok || (last != nil && !refused.Time.After(last.Time)) {
		return last, err
	}
	return &refused, nil
}

// readState fills the counts of s and returns the rest.
func readState(tx *store.Tx, s *PoolStatus, now time.Time) (ss storedState, err error) {
	if ss.node, ss.known, err = tx.Node(); err != nil {
		return ss, err
	}
	if ss.waiting, err = tx.Waiting(now); err != nil {
		return ss, err
	}
	if ss.snap, err = tx.Snapshot(); err != nil {
		return ss, err
	}
	if ss.settings, err = tx.Settings(); err != nil {
		return ss, err
	}
	if ss.meta, err = tx.PoolMeta(); err != nil {
		return ss, err
	}
	as, err := tx.Assignments()
	if err != nil {
		return ss, err
	}
	in, err := tx.Intents()
	if err != nil {
		return ss, err
	}
	s.Assignments, s.Intents = len(as), len(in)
	for _, a := range as {
		s.Pods = append(s.Pods, podStatus(a))
	}
	slices.SortStableFunc(s.Pods, func(a, b PodStatus) int { return strings.Compare(a.Pod, b.Pod) })
	if r, ok, err := tx.ReconcileReport(); err != nil {
		return ss, err
	} else if ok {
		ss.last = &r
	}
	return ss, nil
}

// eniStatus counts e's addresses by state; pods maps an owner key to its pod.
func eniStatus(e pool.ENI, pods map[string]string, cooldown time.Duration, now time.Time) ENIStatus {
	es := ENIStatus{ID: e.ID, DeviceIndex: e.DeviceIndex, Card: e.Card, Class: string(e.Class), Why: e.Why,
		Primary: e.Primary(), Ready: e.Ready, MAC: e.MAC,
		PrimaryIP: e.PrimaryIP.String(), Blocks: len(e.Blocks), Addresses: []AddrState{},
		Profile: string(e.Profile), GroupsDrift: e.GroupsDrift}
	for _, b := range e.Blocks {
		for _, a := range b.Addrs {
			state := a.State
			if b.Releasing {
				state = pool.Releasing
			} else if state == pool.Cooling && now.Sub(a.Since) >= cooldown {
				state = pool.Free
			}
			switch state {
			case pool.Free:
				es.Free++
			case pool.Cooling:
				es.Cooling++
			case pool.Assigned:
				es.Assigned++
			case pool.Releasing:
				es.Releasing++
			}
			es.Addresses = append(es.Addresses, AddrState{IP: a.IP.String(), Block: b.CIDR.String(),
				State: string(state), Since: a.Since, Owner: a.Owner, Pod: pods[a.Owner]})
		}
	}
	return es
}

// growth says what the next pass would do and what keeps the pool from
// growing: a subnet back-off, or the operator's switch (then no action).
func (s *PoolStatus) growth(ss storedState, plan pool.Plan, cfg settings.Effective, now time.Time) {
	if now.Before(ss.snap.GrowBlockedUntil) {
		s.GrowBlocked = fmt.Sprintf("until %s: %s", ss.snap.GrowBlockedUntil.Format(time.RFC3339), ss.snap.GrowBlockedWhy)
	}
	if s.NoProvisioning = cfg.NoProvisioning(); s.NoProvisioning == "" {
		s.Pending = append(s.Pending, plan.Actions...)
	}
}

// enis is each ENI's status, its addresses named by the pods that hold them.
func (s *PoolStatus) enis(snap pool.Snapshot, cooldown time.Duration, now time.Time) []ENIStatus {
	pods := map[string]string{}
	for _, p := range s.Pods {
		pods[store.AssignmentKey(p.ContainerID, p.IfName)] = p.Pod
	}
	out := []ENIStatus{}
	for _, e := range snap.ENIs {
		out = append(out, eniStatus(e, pods, cooldown, now))
	}
	return out
}
