package reconcile

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net/netip"
	"slices"
	"time"

	"vpc-cni/cloud"
	"vpc-cni/pool"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// The read step: where a pass learns the node's ENIs, addresses and prefixes.
//
// EC2 throttles per account, so a pass at rest reads IMDS (per instance, free)
// and makes no EC2 call when IMDS shows exactly what the store holds. EC2 is
// the truth for addresses and is asked whenever the pass cannot rely on IMDS:
// IMDS disagrees with the store (IMDS lags EC2, so a disagreement may be
// either side's news), a mutation of this node's left its outcome unknown
// (a mutation is confirmed by EC2, never by a lagging IMDS: by the answer to
// the call itself when it says all the call did, else by a Describe),
// intents are pending, or the safety-net interval passed (changes made
// outside the node that IMDS has not shown yet). The IMDS view is used only when it agrees
// with the store, so it never adds an address the store lacks and never keeps
// one it shows gone: an address EC2 or IMDS has shown gone is dropped by the
// merge of EC2's answer, and a lagging IMDS that still lists it disagrees with
// the store and sends the pass to EC2 again.

// Sources of a pass's view of the ENIs (Report.Observed).
const (
	FromIMDS = "imds"
	FromEC2  = "ec2"
)

// observe returns the node's ENIs as the merge takes them, from IMDS when it
// agrees with the store and otherwise from one DescribeNetworkInterfaces.
func (p *pass) observe(ctx context.Context) ([]cloud.ENIInfo, error) {
	why, view, err := p.ec2Reason(ctx)
	if err != nil {
		return nil, err
	}
	p.resync = slices.Contains([]string{readEveryPass, readFirst, readUnclassified, readSafetyNet}, why)
	if why == "" && p.cfg.IMDSOnly {
		return p.observeIMDSOnly(ctx)
	}
	if why == "" {
		p.rep.Observed = FromIMDS
		return view, nil
	}
	truth, err := p.Cloud.InstanceENIs(ctx, p.node.InstanceID)
	p.rep.Calls = append(p.rep.Calls, "DescribeNetworkInterfaces")
	if err != nil {
		return nil, fmt.Errorf("reading the node's ENIs from EC2: %w", err)
	}
	if err := vetTruth(p.node, truth); err != nil {
		return nil, err // before any write: one bad answer changes nothing
	}
	p.rep.Observed = FromEC2 + ": " + why
	if !p.opts.DryRun {
		now := p.now()
		err = p.Store.Update(func(tx *store.Tx) error { return tx.PutEC2Sync(now, false) })
	}
	return truth, err
}

// Why a pass reads EC2 whatever IMDS shows: these reads also look for what
// IMDS never shows (a security group tagged since, resolveForDrift).
const (
	readEveryPass    = "every pass (" + settings.EC2ResyncInterval + "=0)"
	readFirst        = "first read"
	readUnclassified = "ENIs not yet classified"
	readSafetyNet    = "safety-net interval"
)

// ec2Reason says why this pass must read EC2, or "" and the IMDS view (as
// the merge takes it) when IMDS agrees with the store.
// storedView reads what ec2Reason compares IMDS with, in one transaction.
func (p *pass) storedView() (meta store.PoolMeta, snap pool.Snapshot, v6 store.IPv6Pool, err error) {
	err = p.Store.View(func(tx *store.Tx) (err error) {
		if meta, err = tx.PoolMeta(); err != nil {
			return err
		}
		if v6, _, err = tx.IPv6Pool(); err != nil {
			return err
		}
		snap, err = tx.Snapshot()
		return err
	})
	return meta, snap, v6, err
}

func (p *pass) ec2Reason(ctx context.Context) (string, []cloud.ENIInfo, error) {
	if p.cfg.IMDSOnly {
		return "", nil, nil // observe reads IMDS, whatever it shows
	}
	if p.cfg.EC2Resync <= 0 {
		return readEveryPass, nil, nil
	}
	if len(p.orphans) > 0 {
		return "intents pending", nil, nil
	}
	meta, snap, v6, err := p.storedView()
	if errors.Is(err, store.ErrNotInitialized) {
		return readFirst, nil, nil
	}
	if err != nil {
		return "", nil, err
	}
	switch {
	case meta.LastEC2Describe.IsZero():
		return readFirst, nil, nil
	case meta.ConfirmNeeded:
		return "confirming this node's changes", nil, nil
	case slices.ContainsFunc(snap.ENIs, func(e pool.ENI) bool { return !e.Facts.Known }):
		return readUnclassified, nil, nil
	case !p.now().Before(ResyncDue(p.node.InstanceID, meta.LastEC2Describe, p.cfg.EC2Resync)):
		return readSafetyNet, nil, nil
	}
	view, err := p.readIMDS(ctx)
	if err != nil {
		return "IMDS unreadable: " + err.Error(), nil, nil
	}
	truth := imdsTruth(view)
	if !agrees(snap, truth) {
		return "IMDS disagrees with the store", nil, nil
	}
	if !ipv6Agrees(p.cfg.Pool, v6, truth) {
		return "IMDS does not list the IPv6 /80", nil, nil
	}
	if why := p.profileGroupsChanged(ctx, snap); why != "" {
		return why, nil, nil
	}
	return "", truth, nil
}

// readIMDS reads the attached ENIs from IMDS, with their IPv6 fields when
// pods take IPv6 (IPv4-only nodes do not pay those reads).
func (p *pass) readIMDS(ctx context.Context) ([]cloud.IMDSInterface, error) {
	if p.cfg.Pool.PodIPv6() {
		return p.Cloud.AttachedInterfacesIPv6(ctx)
	}
	return p.Cloud.AttachedInterfaces(ctx)
}

// ResyncDue is when a node next reads EC2 at the latest: interval after the
// last read, jittered by ±10 % with a hash of the instance and that read, so
// nodes started together spread their reads out and stay spread.
func ResyncDue(instanceID string, last time.Time, interval time.Duration) time.Time {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%d", instanceID, last.UnixNano())
	frac := float64(h.Sum64()%10000) / 10000 // [0, 1)
	return last.Add(time.Duration(float64(interval) * (0.9 + 0.2*frac)))
}

// imdsTruth is the IMDS view in the form EC2's answer takes.
func imdsTruth(view []cloud.IMDSInterface) []cloud.ENIInfo {
	out := make([]cloud.ENIInfo, 0, len(view))
	for _, v := range view {
		e := cloud.ENIInfo{ID: v.ENIID, MAC: v.MAC, SubnetID: v.SubnetID, DeviceIndex: v.DeviceIndex,
			NetworkCard: v.NetworkCard, Attached: true, Prefixes: slices.Clone(v.Prefixes),
			IPv6s: slices.Clone(v.IPv6s), IPv6Prefixes: slices.Clone(v.IPv6Prefixes)}
		if len(v.IPv4s) > 0 {
			e.PrimaryIP, e.Secondary = v.IPv4s[0], slices.Clone(v.IPv4s[1:])
		}
		slices.SortFunc(e.Secondary, netip.Addr.Compare)
		slices.SortFunc(e.Prefixes, func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr()) })
		out = append(out, e)
	}
	return out
}

// agrees reports whether the view shows exactly the store's ENIs (identity,
// device, card, MAC, subnet, primary address) and blocks, so merging it
// changes nothing. Of a not-ours ENI the store keeps only the blocks pods
// hold, so those must still be there and the rest is not the pool's.
func agrees(snap pool.Snapshot, view []cloud.ENIInfo) bool {
	if len(snap.ENIs) != len(view) || len(view) == 0 {
		return false
	}
	byID := map[string]cloud.ENIInfo{}
	for _, v := range view {
		byID[v.ID] = v
	}
	for _, e := range snap.ENIs {
		v, ok := byID[e.ID]
		if !ok || v.DeviceIndex != e.DeviceIndex || v.NetworkCard != e.Card || v.MAC != e.MAC || v.SubnetID != e.SubnetID || v.PrimaryIP != e.PrimaryIP {
			return false
		}
		want := truthBlocks(v)
		if e.NotOurs() {
			want = notOursBlocks(e, want)
		}
		if len(want) != len(e.Blocks) {
			return false
		}
		have := map[netip.Prefix]bool{}
		for _, b := range e.Blocks {
			have[b.CIDR] = true
		}
		for _, c := range want {
			if !have[c] {
				return false
			}
		}
	}
	return true
}

// expectConfirm records, before this pass mutates EC2, that the next pass
// must read EC2 to confirm what it did; a process killed mid-call leaves it
// set. The commit clears it when EC2's answers said all the calls did
// (settleConfirm).
func (p *pass) expectConfirm(steps []step) error {
	if len(steps) == 0 {
		return nil
	}
	return p.Store.Update(func(tx *store.Tx) error {
		m, err := tx.PoolMeta()
		if err != nil {
			return err
		}
		return tx.PutEC2Sync(m.LastEC2Describe, true)
	})
}

// forExecute returns the EC2 answer the steps need: deleting an ENI needs
// its attachment, which IMDS does not show, so a pass that read IMDS and
// plans a delete reads EC2 first.
func (p *pass) forExecute(ctx context.Context, steps []step, truth []cloud.ENIInfo) ([]cloud.ENIInfo, error) {
	if p.rep.Observed != FromIMDS || !slices.ContainsFunc(steps, func(s step) bool { return s.Kind == pool.DeleteENI }) {
		return truth, nil
	}
	truth, err := p.Cloud.InstanceENIs(ctx, p.node.InstanceID)
	p.rep.Calls = append(p.rep.Calls, "DescribeNetworkInterfaces")
	if err != nil {
		return nil, fmt.Errorf("reading the node's ENIs from EC2 before deleting one: %w", err)
	}
	return truth, vetTruth(p.node, truth)
}

// settleConfirm clears the confirmation expectConfirm asked for when every
// step's outcome is EC2's own word: the store, which the commit has just
// updated in the same transaction, then holds what EC2 has, and the next
// pass may trust IMDS once IMDS shows the same (an IMDS that lags behind the
// store disagrees and sends that pass to EC2). A step whose outcome is
// unknown (a timeout, a 5xx, throttling the SDK's retries hid, an answer
// missing addresses) keeps it.
func settleConfirm(tx *store.Tx, results []result) error {
	if len(results) == 0 || slices.ContainsFunc(results, func(r result) bool { return !answered(r) }) {
		return nil
	}
	m, err := tx.PoolMeta()
	if err != nil || !m.ConfirmNeeded {
		return err
	}
	return tx.PutEC2Sync(m.LastEC2Describe, false)
}

// answered reports whether EC2's answer to the step tells all it changed:
// CreateNetworkInterface returns the ENI with its addresses (the attach and
// delete-on-termination calls that follow return their own answers),
// AssignPrivateIpAddresses the blocks it assigned, and an unassign or delete
// either succeeded or failed. A step never sent, refused outright or
// throttled (RequestLimitExceeded: EC2 did nothing) changed nothing; but an
// instance-type limit refusal says the store's view of the ENIs is off, so
// EC2 is read again. (Behind the SDK's retries a throttled call may follow
// an attempt whose answer was lost: an address so assigned is only unknown
// to the store, and IMDS shows it soon, which sends a pass to EC2; an
// unassign or delete keeps its intent, which does too.)
func answered(res result) bool {
	switch {
	case errors.Is(res.Err, errSkipped):
		return true
	case res.Err != nil:
		k := cloud.Classify(res.Err)
		return k == cloud.KindThrottled || k.Refused() && k != cloud.KindLimit
	case res.Kind == pool.CreateENI:
		c := res.Created
		return c != nil && c.ID != "" && c.MAC != "" && c.PrimaryIP.IsValid() && len(truthBlocks(*c)) == res.Count
	case res.Kind == pool.Assign:
		return len(res.Blocks) == res.Count
	}
	return true
}
