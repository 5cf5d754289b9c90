package store

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"vpc-cni/pool"
)

// Assignment is one pod interface's address.
type Assignment struct {
	Key         string     `json:"key"` // "<containerID>/<ifName>"
	ContainerID string     `json:"containerId"`
	IfName      string     `json:"ifName"`
	Network     string     `json:"network,omitempty"`
	IP          netip.Addr `json:"ip"` // the VPC IPv4; zero for an IPv6-only pod
	// IPv6: the VPC IPv6 (/128 from the primary ENI's /80), IPv6 and
	// dual-stack modes. EgressIP: the egress interface's address, v4if0
	// (169.254.172.0/22) for an IPv6-only pod or v6if0 (fd00::ac:0/118) for
	// an IPv4-only pod with ENABLE_V6_EGRESS. Both absent in older records.
	IPv6         netip.Addr `json:"ipv6,omitzero"`
	EgressIP     netip.Addr `json:"egressIp,omitzero"`
	ENIID        string     `json:"eniId"`
	DeviceIndex  int        `json:"deviceIndex"`
	Netns        string     `json:"netns,omitempty"`
	PodNamespace string     `json:"podNamespace,omitempty"`
	PodName      string     `json:"podName,omitempty"`
	PodUID       string     `json:"podUid,omitempty"`
	HostVeth     string     `json:"hostVeth,omitempty"`
	Time         time.Time  `json:"time"`
	// Profile: the network profile the pod picked (its IPv4 is on an ENI
	// of that profile); DEL and GC read it here, never the annotation.
	Profile pool.Pool `json:"profile,omitempty"`
}

// AssignmentKey is the key of a pod interface: "<containerID>/<ifName>".
func AssignmentKey(containerID, ifName string) string { return containerID + "/" + ifName }

// normalize fills Key from ContainerID and IfName (or the reverse).
func (a Assignment) normalize() (Assignment, error) {
	if a.Key == "" && a.ContainerID != "" && a.IfName != "" {
		a.Key = AssignmentKey(a.ContainerID, a.IfName)
	}
	if a.Key == "" {
		return a, fmt.Errorf("assignment without key or container ID and interface: %w", ErrInvalid)
	}
	if a.ContainerID == "" && a.IfName == "" {
		a.ContainerID, a.IfName, _ = strings.Cut(a.Key, "/")
	}
	return a, nil
}

// Take gives the pod interface a.Key an address of its pool (in.Profile)
// and records the assignment. It is idempotent: if the key already holds an
// address, that assignment is returned unchanged. Otherwise it picks as
// pool.PickPodAddress does: the lowest device index ready ENI of the pool
// at or above pool.FirstPodDevice, lowest block, lowest address that is
// Free, or Cooling for at least in.Cooldown, in a block that is not
// Releasing. ErrNoFreeAddress when there is none.
func (t *Tx) Take(a Assignment, now time.Time, in pool.Config) (Assignment, error) {
	a, err := a.normalize()
	if err != nil {
		return a, err
	}
	if prev, ok, err := t.Assignment(a.Key); err != nil || ok {
		return prev, err
	}
	a.Profile = in.Profile
	dev, ip := 0, netip.Addr{}
	cooling, err := t.usable(now, in, func(d int, addr netip.Addr) bool { dev, ip = d, addr; return false })
	if err != nil {
		return a, err
	}
	if !ip.IsValid() {
		return a, fmt.Errorf("%w (pool %s, %d cooling)", ErrNoFreeAddress, in.Profile, cooling)
	}
	return t.assign(a, dev, ip, now)
}

func (t *Tx) assign(a Assignment, dev int, ip netip.Addr, now time.Time) (Assignment, error) {
	rec, ok, err := t.addr(ip)
	if err != nil {
		return a, err
	}
	if !ok || (rec.State != pool.Free && rec.State != pool.Cooling) {
		return a, fmt.Errorf("%s: avail index entry %s disagrees with the address (%v): %w", t.path, ip, rec.State, ErrInconsistent)
	}
	rec.State, rec.Owner, rec.Since = pool.Assigned, a.Key, now
	raw, err := rec.encode()
	if err != nil {
		return a, err
	}
	if err := t.bucket(bAddrs).Put(ipKey(ip), raw); err != nil {
		return a, err
	}
	if err := t.bucket(bAvail).Delete(availKey(dev, ip)); err != nil {
		return a, err
	}
	a.IP, a.ENIID, a.DeviceIndex, a.Time = ip, rec.ENIID, dev, now
	return a, t.putJSON(bAssignments, []byte(a.Key), a)
}

// Give returns key's addresses to the pool: the IPv4 and the IPv6 become
// Cooling since now, the egress address is free at once, and the
// assignment is deleted. An unknown key returns ok false and no error.
func (t *Tx) Give(key string, now time.Time) (a Assignment, ok bool, err error) {
	if a, ok, err = t.Assignment(key); err != nil || !ok {
		return a, ok, err
	}
	if err := t.bucket(bAssignments).Delete([]byte(key)); err != nil {
		return a, false, err
	}
	if err := t.giveIPv6(a, now); err != nil || !a.IP.IsValid() {
		return a, true, err // an IPv6-only pod has no IPv4 to give back
	}
	rec, found, err := t.addr(a.IP)
	if err != nil || !found || rec.State != pool.Assigned || rec.Owner != key {
		return a, true, err // the address went away (ENI removed) or is not ours
	}
	e, err := t.mustENI(rec.ENIID)
	if err != nil {
		return a, true, err
	}
	blk, _, err := t.block(rec.ENIID, rec.Block)
	if err != nil {
		return a, true, err
	}
	rec.State, rec.Since, rec.Owner = pool.Cooling, now, ""
	return a, true, t.putAddr(e, blk.Releasing, a.IP, rec)
}

// Assignment returns the assignment of key; ok is false if there is none.
func (t *Tx) Assignment(key string) (a Assignment, ok bool, err error) {
	ok, err = t.getJSON(bAssignments, []byte(key), &a)
	return a, ok, err
}

// Assignments lists every assignment, by key.
func (t *Tx) Assignments() ([]Assignment, error) {
	var out []Assignment
	err := t.bucket(bAssignments).ForEach(func(k, v []byte) error {
		a, _, err := t.Assignment(string(k))
		out = append(out, a)
		return err
	})
	return out, err
}
