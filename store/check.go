package store

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"

	"vpc-cni/pool"
)

// Check verifies the invariants the verbs keep: every address belongs to a
// stored block of a stored ENI; the avail index holds exactly the available
// addresses with their current state; assigned addresses and assignments
// point at each other; no address is assigned twice. It returns nil or an
// ErrInconsistent error listing the problems.
func (t *Tx) Check() error {
	var problems []error
	report := func(format string, args ...any) {
		problems = append(problems, fmt.Errorf(format, args...))
	}
	wantAvail, owners := t.checkAddrs(report)
	t.checkAvail(wantAvail, report)
	t.checkAssignments(owners, report)
	t.checkIPv6(report)
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%s: %w: %w", t.path, ErrInconsistent, errors.Join(problems...))
}

// checkAddrs checks each address against its ENI and block, returning the
// avail entries it implies and the owner of each assigned address.
func (t *Tx) checkAddrs(report func(string, ...any)) (map[string][]byte, map[netip.Addr]string) {
	want := map[string][]byte{}
	owners := map[netip.Addr]string{}
	enis := map[string]eniRecord{}
	_ = t.bucket(bAddrs).ForEach(func(k, v []byte) error {
		ip, err := parseIPKey(k)
		if err != nil {
			report("%v", err)
			return nil
		}
		rec, err := decodeAddr(v)
		if err != nil {
			report("address %s: %v", ip, err)
			return nil
		}
		e, ok := enis[rec.ENIID]
		if !ok {
			if e, ok, err = t.eni(rec.ENIID); err != nil || !ok {
				report("address %s: ENI %s missing (%v)", ip, rec.ENIID, err)
				return nil
			}
			enis[rec.ENIID] = e
		}
		blk, ok, err := t.block(rec.ENIID, rec.Block)
		if err != nil || !ok || !rec.Block.Contains(ip) {
			report("address %s: block %s of %s missing or not containing it (%v)", ip, rec.Block, rec.ENIID, err)
			return nil
		}
		if available(e, blk.Releasing, rec) {
			want[string(availKey(e.DeviceIndex, ip))] = availValue(rec)
		}
		if rec.State == pool.Assigned {
			owners[ip] = rec.Owner
		}
		return nil
	})
	return want, owners
}

func (t *Tx) checkAvail(want map[string][]byte, report func(string, ...any)) {
	_ = t.bucket(bAvail).ForEach(func(k, v []byte) error {
		w, ok := want[string(k)]
		if !ok {
			report("avail entry %x has no available address", k)
		} else if !bytes.Equal(w, v) {
			report("avail entry %x is %x, address says %x", k, v, w)
		}
		delete(want, string(k))
		return nil
	})
	for k := range want {
		report("available address missing from the avail index: %x", k)
	}
}

func (t *Tx) checkAssignments(owners map[netip.Addr]string, report func(string, ...any)) {
	holder := map[netip.Addr]string{}
	_ = t.bucket(bAssignments).ForEach(func(k, v []byte) error {
		var a Assignment
		if err := jsonValue(v, &a); err != nil {
			report("assignment %s: %v", k, err)
			return nil
		}
		if a.Key != string(k) {
			report("assignment %s has key %q", k, a.Key)
		}
		if !a.IP.IsValid() {
			return nil // IPv6 only: checkIPv6 checks it
		}
		if other, dup := holder[a.IP]; dup {
			report("address %s assigned to both %s and %s", a.IP, other, a.Key)
		}
		holder[a.IP] = a.Key
		if _, exists, _ := t.addr(a.IP); exists && owners[a.IP] != a.Key {
			report("assignment %s holds %s but the address is not assigned to it", a.Key, a.IP)
		}
		return nil
	})
	for ip, owner := range owners {
		if holder[ip] != owner {
			report("address %s is assigned to %q but its assignment is %q", ip, owner, holder[ip])
		}
	}
}
