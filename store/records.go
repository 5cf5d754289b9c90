package store

import (
	"bytes"
	"fmt"
	"net/netip"
	"time"

	"vpc-cni/pool"
)

// eniRecord is an ENI as stored; its blocks and addresses live in their own
// buckets.
type eniRecord struct {
	ID          string       `json:"id"`
	DeviceIndex int          `json:"deviceIndex"`
	MAC         string       `json:"mac"`
	PrimaryIP   netip.Addr   `json:"primaryIp"`
	SubnetID    string       `json:"subnetId"`
	SubnetCIDR  netip.Prefix `json:"subnetCidr"`
	Ready       bool         `json:"ready"`
	CreatedAt   time.Time    `json:"createdAt"`
	// Schema 2: absent in a version 1 record (card 0, class unknown).
	Card  int           `json:"card,omitempty"`
	Class pool.Class    `json:"class,omitempty"`
	Why   string        `json:"why,omitempty"`
	Facts pool.ENIFacts `json:"facts,omitzero"`
	// Schema 3: the network profile the ENI serves, and why its groups
	// are not the profile's any more (both absent for the default pool).
	Profile     pool.Pool `json:"profile,omitempty"`
	GroupsDrift string    `json:"groupsDrift,omitempty"`
	// Absent in older records: a profile ENI's groups as last checked
	// (the first pass with EC2 records them).
	Groups []string `json:"groups,omitempty"`
}

func eniRecordOf(e pool.ENI) eniRecord {
	return eniRecord{e.ID, e.DeviceIndex, e.MAC, e.PrimaryIP, e.SubnetID, e.SubnetCIDR, e.Ready, e.CreatedAt,
		e.Card, e.Class, e.Why, e.Facts, e.Profile, e.GroupsDrift, e.Groups}
}

func (r eniRecord) eni() pool.ENI {
	return pool.ENI{ID: r.ID, DeviceIndex: r.DeviceIndex, MAC: r.MAC, PrimaryIP: r.PrimaryIP,
		SubnetID: r.SubnetID, SubnetCIDR: r.SubnetCIDR, Ready: r.Ready, CreatedAt: r.CreatedAt,
		Card: r.Card, Class: r.Class, Why: r.Why, Facts: r.Facts, Profile: r.Profile, GroupsDrift: r.GroupsDrift, Groups: r.Groups}
}

type blockEntry struct {
	CIDR      netip.Prefix
	Releasing bool
}

type addrEntry struct {
	IP  netip.Addr
	Rec addrRecord
}

func (t *Tx) eni(id string) (r eniRecord, ok bool, err error) {
	ok, err = t.getJSON(bENIs, []byte(id), &r)
	return r, ok, err
}

func (t *Tx) mustENI(id string) (eniRecord, error) {
	r, ok, err := t.eni(id)
	if err == nil && !ok {
		err = fmt.Errorf("ENI %s: %w", id, ErrNotFound)
	}
	return r, err
}

// eniBlocks lists an ENI's blocks, ascending.
func (t *Tx) eniBlocks(id string) ([]blockEntry, error) {
	var out []blockEntry
	pfx := blockKeyPrefix(id)
	c := t.bucket(bBlocks).Cursor()
	for k, v := c.Seek(pfx); k != nil && bytes.HasPrefix(k, pfx); k, v = c.Next() {
		cidr, err := parsePrefixKey(k[len(pfx):])
		if err != nil {
			return nil, err
		}
		rel, err := decodeBlock(v)
		if err != nil {
			return nil, err
		}
		out = append(out, blockEntry{cidr, rel})
	}
	return out, nil
}

func (t *Tx) block(eniID string, cidr netip.Prefix) (b blockEntry, ok bool, err error) {
	v := t.bucket(bBlocks).Get(blockKey(eniID, cidr))
	if v == nil {
		return b, false, nil
	}
	rel, err := decodeBlock(v)
	return blockEntry{cidr, rel}, true, err
}

// blockAddrs lists the block's addresses, ascending. Addresses are keyed by
// IP, so a block's are one contiguous run of keys.
func (t *Tx) blockAddrs(eniID string, cidr netip.Prefix) ([]addrEntry, error) {
	var out []addrEntry
	c := t.bucket(bAddrs).Cursor()
	for k, v := c.Seek(ipKey(cidr.Masked().Addr())); k != nil; k, v = c.Next() {
		ip, err := parseIPKey(k)
		if err != nil {
			return nil, err
		}
		if !cidr.Contains(ip) {
			break
		}
		rec, err := decodeAddr(v)
		if err != nil {
			return nil, fmt.Errorf("address %s: %w", ip, err)
		}
		if rec.ENIID == eniID && rec.Block == cidr {
			out = append(out, addrEntry{ip, rec})
		}
	}
	return out, nil
}

func (t *Tx) addr(ip netip.Addr) (r addrRecord, ok bool, err error) {
	v := t.bucket(bAddrs).Get(ipKey(ip))
	if v == nil {
		return r, false, nil
	}
	r, err = decodeAddr(v)
	return r, true, err
}

// available reports whether Take may hand the address out (cooldown aside):
// this is exactly what the avail index holds. A not-ours ENI's addresses never are, whatever else says: this is the
// one take that the plugin and what-if share. A profile's ENI is not in the
// index (its pods take by scanning its few ENIs, scanPool): a default
// pod can never be given one of its addresses.
func available(e eniRecord, releasing bool, r addrRecord) bool {
	return usableENI(e) && e.Profile == pool.DefaultPool && !releasing && (r.State == pool.Free || r.State == pool.Cooling)
}

// usableENI reports whether pods may be given the ENI's addresses at all.
func usableENI(e eniRecord) bool {
	return e.Ready && e.Class != pool.NotOurs && e.Card == 0 && e.GroupsDrift == ""
}

// putAddr writes an address and keeps the avail index in step with it.
func (t *Tx) putAddr(e eniRecord, releasing bool, ip netip.Addr, r addrRecord) error {
	raw, err := r.encode()
	if err != nil {
		return fmt.Errorf("address %s: %w", ip, err)
	}
	if err := t.bucket(bAddrs).Put(ipKey(ip), raw); err != nil {
		return err
	}
	return t.syncAvail(e, releasing, ip, r)
}

func (t *Tx) syncAvail(e eniRecord, releasing bool, ip netip.Addr, r addrRecord) error {
	key := availKey(e.DeviceIndex, ip)
	if available(e, releasing, r) {
		return t.bucket(bAvail).Put(key, availValue(r))
	}
	return t.bucket(bAvail).Delete(key)
}

func (t *Tx) deleteAddr(e eniRecord, ip netip.Addr) error {
	if err := t.bucket(bAvail).Delete(availKey(e.DeviceIndex, ip)); err != nil {
		return err
	}
	return t.bucket(bAddrs).Delete(ipKey(ip))
}

// deleteBlock removes a block and its addresses.
func (t *Tx) deleteBlock(e eniRecord, cidr netip.Prefix) error {
	addrs, err := t.blockAddrs(e.ID, cidr)
	if err != nil {
		return err
	}
	for _, a := range addrs {
		if err := t.deleteAddr(e, a.IP); err != nil {
			return err
		}
	}
	return t.bucket(bBlocks).Delete(blockKey(e.ID, cidr))
}

// putBlock writes a block and its addresses.
func (t *Tx) putBlock(e eniRecord, b pool.Block) error {
	if err := t.bucket(bBlocks).Put(blockKey(e.ID, b.CIDR), blockValue(b.Releasing)); err != nil {
		return err
	}
	for _, a := range b.Addrs {
		r := addrRecord{ENIID: e.ID, Block: b.CIDR, State: a.State, Since: a.Since, Owner: a.Owner}
		if err := t.putAddr(e, b.Releasing, a.IP, r); err != nil {
			return err
		}
	}
	return nil
}
