package store

import (
	"bytes"
	"cmp"
	"fmt"
	"net/netip"
	"slices"

	"vpc-cni/pool"
)

// Snapshot returns the whole pool: ENIs ascending by device index, their
// blocks and addresses ascending, and the pool's timers. Addresses of a
// releasing block show as Releasing unless a pod holds them. It reads each
// bucket once, in key order.
func (t *Tx) Snapshot() (pool.Snapshot, error) {
	var snap pool.Snapshot
	meta, err := t.PoolMeta()
	if err != nil {
		return snap, err
	}
	snap.ExcessSince, snap.GrowBlockedUntil, snap.GrowBlockedWhy = meta.ExcessSince, meta.GrowBlockedUntil, meta.GrowBlockedWhy
	snap.NoPrefixesUntil, snap.FullSubnets, snap.Profiles = meta.NoPrefixesUntil, meta.FullSubnets, meta.Profiles
	recs, err := t.eniRecords()
	if err != nil {
		return snap, err
	}
	blocks, err := t.allBlocks()
	if err != nil {
		return snap, err
	}
	addrs, err := t.allAddrs()
	if err != nil {
		return snap, err
	}
	for _, r := range recs {
		e := r.eni()
		for _, b := range blocks[r.ID] {
			e.Blocks = append(e.Blocks, poolBlock(b, addrs[blockID{r.ID, b.CIDR}]))
		}
		snap.ENIs = append(snap.ENIs, e)
	}
	return snap, nil
}

type blockID struct {
	eni  string
	cidr netip.Prefix
}

// allBlocks maps each ENI ID to its blocks, ascending.
func (t *Tx) allBlocks() (map[string][]blockEntry, error) {
	out := map[string][]blockEntry{}
	err := t.bucket(bBlocks).ForEach(func(k, v []byte) error {
		i := bytes.IndexByte(k, 0)
		if i < 0 {
			return fmt.Errorf("bad block key %x", k)
		}
		cidr, err := parsePrefixKey(k[i+1:])
		if err != nil {
			return err
		}
		rel, err := decodeBlock(v)
		out[string(k[:i])] = append(out[string(k[:i])], blockEntry{cidr, rel})
		return err
	})
	return out, err
}

// allAddrs groups every address by its block, ascending.
func (t *Tx) allAddrs() (map[blockID][]addrEntry, error) {
	out := map[blockID][]addrEntry{}
	err := t.bucket(bAddrs).ForEach(func(k, v []byte) error {
		ip, err := parseIPKey(k)
		if err != nil {
			return err
		}
		rec, err := decodeAddr(v)
		if err != nil {
			return fmt.Errorf("address %s: %w", ip, err)
		}
		id := blockID{rec.ENIID, rec.Block}
		out[id] = append(out[id], addrEntry{ip, rec})
		return nil
	})
	return out, err
}

// poolBlock is the policy's view of a stored block.
func poolBlock(b blockEntry, addrs []addrEntry) pool.Block {
	pb := pool.Block{CIDR: b.CIDR, Releasing: b.Releasing, Addrs: make([]pool.Addr, 0, len(addrs))}
	for _, a := range addrs {
		st := a.Rec.State
		if b.Releasing && st != pool.Assigned {
			st = pool.Releasing
		}
		pb.Addrs = append(pb.Addrs, pool.Addr{IP: a.IP, State: st, Since: a.Rec.Since, Owner: a.Rec.Owner})
	}
	return pb
}

// eniRecords lists the ENIs by device index (then ID).
func (t *Tx) eniRecords() ([]eniRecord, error) {
	var recs []eniRecord
	err := t.bucket(bENIs).ForEach(func(k, _ []byte) error {
		r, _, err := t.eni(string(k))
		recs = append(recs, r)
		return err
	})
	slices.SortFunc(recs, func(a, b eniRecord) int {
		return cmp.Or(cmp.Compare(a.Card, b.Card), cmp.Compare(a.DeviceIndex, b.DeviceIndex), cmp.Compare(a.ID, b.ID))
	})
	return recs, err
}

func (t *Tx) loadENI(r eniRecord) (pool.ENI, error) {
	e := r.eni()
	blocks, err := t.eniBlocks(r.ID)
	if err != nil {
		return e, err
	}
	for _, b := range blocks {
		addrs, err := t.blockAddrs(r.ID, b.CIDR)
		if err != nil {
			return e, err
		}
		e.Blocks = append(e.Blocks, poolBlock(b, addrs))
	}
	return e, nil
}

// ENI returns one ENI with its blocks and addresses.
func (t *Tx) ENI(id string) (pool.ENI, bool, error) {
	r, ok, err := t.eni(id)
	if err != nil || !ok {
		return pool.ENI{}, ok, err
	}
	e, err := t.loadENI(r)
	return e, true, err
}

// PutENI inserts or replaces an ENI with exactly the given blocks and
// addresses, with one exception that keeps a stale caller from undoing pod
// work: an address the ENI already had keeps its stored state, since and
// owner (Take and Give own those). New addresses take the given values.
func (t *Tx) PutENI(e pool.ENI) error {
	if err := validateENI(e); err != nil {
		return err
	}
	old, found, err := t.eni(e.ID)
	if err != nil {
		return err
	}
	prior := map[netip.Addr]addrRecord{}
	if found {
		if err := t.clearENI(old, prior); err != nil {
			return err
		}
	}
	if err := t.checkAddrsFree(e.ID, e.Blocks); err != nil {
		return err
	}
	rec := eniRecordOf(e)
	if err := t.putJSON(bENIs, []byte(e.ID), rec); err != nil {
		return err
	}
	for _, b := range e.Blocks {
		b.Addrs = slices.Clone(b.Addrs)
		for i, a := range b.Addrs {
			if p, ok := prior[a.IP]; ok {
				b.Addrs[i].State, b.Addrs[i].Since, b.Addrs[i].Owner = p.State, p.Since, p.Owner
			}
		}
		if err := t.putBlock(rec, b); err != nil {
			return err
		}
	}
	return nil
}

// clearENI deletes the ENI's blocks and addresses, noting the addresses'
// records in prior.
func (t *Tx) clearENI(e eniRecord, prior map[netip.Addr]addrRecord) error {
	err := t.forEachAddr(e, func(_ blockEntry, a addrEntry) error {
		prior[a.IP] = a.Rec
		return nil
	})
	if err != nil {
		return err
	}
	blocks, err := t.eniBlocks(e.ID)
	if err != nil {
		return err
	}
	for _, b := range blocks {
		if err := t.deleteBlock(e, b.CIDR); err != nil {
			return err
		}
	}
	return nil
}

// checkAddrsFree refuses addresses that another ENI already has.
func (t *Tx) checkAddrsFree(eniID string, blocks []pool.Block) error {
	for _, b := range blocks {
		for _, a := range b.Addrs {
			r, ok, err := t.addr(a.IP)
			if err != nil {
				return err
			}
			if ok && (r.ENIID != eniID || r.Block != b.CIDR) {
				return fmt.Errorf("address %s is already on %s block %s: %w", a.IP, r.ENIID, r.Block, ErrExists)
			}
		}
	}
	return nil
}

// DeleteENI removes an ENI with its blocks and addresses. Deleting an
// unknown ENI is not an error. Assignments are left for their pods' DEL.
func (t *Tx) DeleteENI(id string) error {
	r, ok, err := t.eni(id)
	if err != nil || !ok {
		return err
	}
	if err := t.clearENI(r, map[netip.Addr]addrRecord{}); err != nil {
		return err
	}
	return t.bucket(bENIs).Delete([]byte(id))
}

// SetENIReady records whether the ENI's host networking is set up; only a
// ready ENI's addresses are handed out.
func (t *Tx) SetENIReady(id string, ready bool) error {
	r, err := t.mustENI(id)
	if err != nil || r.Ready == ready {
		return err
	}
	r.Ready = ready
	if err := t.putJSON(bENIs, []byte(id), r); err != nil {
		return err
	}
	return t.forEachAddr(r, func(b blockEntry, a addrEntry) error {
		return t.syncAvail(r, b.Releasing, a.IP, a.Rec)
	})
}

// SetENISubnetCIDR records the CIDR of the ENI's subnet once it is learnt
// (an ENI adopted from EC2, or placed in a subnet known only by ID).
func (t *Tx) SetENISubnetCIDR(id string, cidr netip.Prefix) error {
	r, err := t.mustENI(id)
	if err != nil || r.SubnetCIDR == cidr {
		return err
	}
	r.SubnetCIDR = cidr
	return t.putJSON(bENIs, []byte(id), r)
}

func (t *Tx) forEachAddr(e eniRecord, fn func(blockEntry, addrEntry) error) error {
	blocks, err := t.eniBlocks(e.ID)
	if err != nil {
		return err
	}
	for _, b := range blocks {
		addrs, err := t.blockAddrs(e.ID, b.CIDR)
		if err != nil {
			return err
		}
		for _, a := range addrs {
			if err := fn(b, a); err != nil {
				return err
			}
		}
	}
	return nil
}
