package store

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"time"

	"vpc-cni/internal/jsonfields"
	"vpc-cni/pool"
	"vpc-cni/settings"
)

// Node is the instance's identity and limits, learnt once from IMDS and
// DescribeInstanceTypes (they never change for an instance).
type Node struct {
	InstanceID     string         `json:"instanceId"`
	InstanceType   string         `json:"instanceType"`
	Region         string         `json:"region"`
	AZ             string         `json:"az"`
	VPCID          string         `json:"vpcId"`
	VPCCIDRs       []netip.Prefix `json:"vpcCidrs,omitempty"`
	SubnetID       string         `json:"subnetId"`
	SubnetCIDR     netip.Prefix   `json:"subnetCidr"`
	PrimaryENI     string         `json:"primaryEni"`
	PrimaryMAC     string         `json:"primaryMac"`
	PrimaryIP      netip.Addr     `json:"primaryIp"`
	SecurityGroups []string       `json:"securityGroups,omitempty"`
	Limits         pool.Limits    `json:"limits"`
	Hypervisor     string         `json:"hypervisor,omitempty"`
	LearnedAt      time.Time      `json:"learnedAt"`
	// PrimaryIPv6: the primary ENI's first IPv6 (IMDS ipv6s), read by each
	// pass only with ENABLE_V6_EGRESS (its SNAT target). Absent otherwise
	// and in older stores.
	PrimaryIPv6 netip.Addr `json:"primaryIpv6,omitzero"`
	// ConfirmedBoot: the kernel boot ID (/proc/sys/kernel/random/boot_id)
	// under which IMDS last confirmed this is the instance: within that boot
	// the plugin trusts the file without asking IMDS. Absent in older stores
	// (and in a file from another machine it names that machine's boot), so
	// the first process of a boot confirms it.
	ConfirmedBoot string `json:"confirmedBoot,omitempty"`
	// PrefixCapable: the instance can hold /28 prefixes (its hypervisor),
	// learnt by a pass. Absent in older stores until a pass learns it, which
	// reads as not capable: a pod's take then counts single addresses.
	PrefixCapable bool `json:"prefixCapable,omitempty"`
}

// VouchedFor reports whether the node may be used without asking IMDS:
// confirmed in this boot, or by this process (confirmedID).
func (n Node) VouchedFor(boot, confirmedID string) bool {
	return boot != "" && n.ConfirmedBoot == boot || confirmedID != "" && n.InstanceID == confirmedID
}

// Settings are the overrides persisted by `vpcctl pool warm` and the
// configuration the last reconcile pass acted on: every knob with its value
// and where it came from, so status and a hand-run command can say when
// they differ from it.
type Settings struct {
	Overrides settings.Overrides `json:"overrides"`
	Effective pool.Config        `json:"effective"`
	LastPass  []settings.Value   `json:"lastPass,omitempty"`
	UpdatedAt time.Time          `json:"updatedAt"`
}

// PoolMeta is the pool's timers, kept beside the addresses.
type PoolMeta struct {
	ExcessSince      time.Time `json:"excessSince"`
	GrowBlockedUntil time.Time `json:"growBlockedUntil"`
	GrowBlockedWhy   string    `json:"growBlockedWhy,omitempty"`
	// NoPrefixesUntil: the subnet had no free /28; growth uses single IPs
	// before this. Absent in older stores, which reads as zero (never).
	NoPrefixesUntil time.Time `json:"noPrefixesUntil,omitzero"`
	// LastEC2Describe: when a pass last read the node's ENIs from EC2;
	// ConfirmNeeded: a pass mutated EC2 since, and the next must confirm it
	// there (IMDS lags). Both absent in older stores: describe at once.
	LastEC2Describe time.Time `json:"lastEc2Describe,omitzero"`
	ConfirmNeeded   bool      `json:"confirmNeeded,omitempty"`
	// FullSubnets: subnets that answered "no free addresses", each until
	// when new ENIs avoid it and its ENIs are not grown (subnet discovery).
	FullSubnets map[string]time.Time `json:"fullSubnets,omitempty"`
	// Profiles: each network profile pool's own timers (the fields above
	// are the default pool's).
	Profiles map[pool.Pool]pool.Timers `json:"profiles,omitempty"`
}

// ReconcileReport summarises the last reconcile pass.
type ReconcileReport struct {
	Time     time.Time      `json:"time"`
	Duration time.Duration  `json:"duration"`
	Actions  int            `json:"actions"`
	Calls    map[string]int `json:"calls,omitempty"` // EC2 action -> calls
	Error    string         `json:"error,omitempty"`
	Cause    string         `json:"cause,omitempty"`    // what the error means: a cloud.Kind name, "identity", "config", "state"
	Observed string         `json:"observed,omitempty"` // where the pass read the ENIs: "imds" or "ec2: <why>"

	LastLeakSweep time.Time `json:"lastLeakSweep,omitempty"` // the hourly leaked-ENI sweep's last run
}

var (
	kNode      = []byte("node")
	kSettings  = []byte("settings")
	kPoolMeta  = []byte("pool")
	kReconcile = []byte("reconcile")
)

// Node returns the node identity; ok is false before it was learnt.
func (t *Tx) Node() (n Node, ok bool, err error) {
	ok, err = t.getJSON(bMeta, kNode, &n)
	return n, ok, err
}

// PutNode records the node identity.
func (t *Tx) PutNode(n Node) error { return t.putJSON(bMeta, kNode, n) }

// ConfirmBoot records that IMDS confirmed, under boot, that this file's
// node is instanceID; a file whose node is another (replaced meanwhile) or
// none is left alone (ErrNotFound).
func (t *Tx) ConfirmBoot(instanceID, boot string) error {
	n, ok, err := t.Node()
	if err != nil {
		return err
	}
	if !ok || n.InstanceID != instanceID {
		return fmt.Errorf("node %s: %w", instanceID, ErrNotFound)
	}
	if n.ConfirmedBoot == boot {
		return nil
	}
	n.ConfirmedBoot = boot
	return t.PutNode(n)
}

// Settings returns the persisted settings (zero if none yet).
func (t *Tx) Settings() (s Settings, err error) {
	_, err = t.getJSON(bSettings, kSettings, &s)
	return s, err
}

// Overrides returns the persisted overrides alone: an ADD needs nothing
// else of the settings, and decoding the effective configuration and the
// last pass's values would cost every pod start their JSON decoders.
func (t *Tx) Overrides() (settings.Overrides, error) {
	var o settings.Overrides
	raw := t.bucket(bSettings).Get(kSettings)
	if raw == nil {
		return o, nil
	}
	var field json.RawMessage
	err := leadingField(raw, "overrides", &field)
	if err == nil && field != nil {
		err = jsonfields.Decode(field, overridesFields(&o))
	}
	if err != nil {
		return o, fmt.Errorf("%s: %s/%s: %w", t.path, bSettings, kSettings, err)
	}
	return o, nil
}

// PutSettings replaces the settings.
func (t *Tx) PutSettings(s Settings) error { return t.putJSON(bSettings, kSettings, s) }

// PoolMeta returns the pool's timers (zero if none yet).
func (t *Tx) PoolMeta() (m PoolMeta, err error) {
	_, err = t.getJSON(bState, kPoolMeta, &m)
	return m, err
}

// PutPoolTimers records pool p's timers. The state file keeps the default
// pool's in PoolMeta's own fields and each profile's in PoolMeta.Profiles
// (a profile's zero timers are dropped); the prefix fallback is kept.
func (t *Tx) PutPoolTimers(p pool.Pool, timers pool.Timers) error {
	m, err := t.PoolMeta()
	if err != nil {
		return err
	}
	switch {
	case p == pool.DefaultPool:
		m.ExcessSince, m.GrowBlockedUntil, m.GrowBlockedWhy = timers.ExcessSince, timers.GrowBlockedUntil, timers.GrowBlockedWhy
	case timers == (pool.Timers{}):
		delete(m.Profiles, p)
	default:
		if m.Profiles == nil {
			m.Profiles = map[pool.Pool]pool.Timers{}
		}
		m.Profiles[p] = timers
	}
	return t.putJSON(bState, kPoolMeta, m)
}

// PutNoPrefixesUntil records until when growth uses single IPs because the
// subnet has no free /28 prefix; the other timers are kept as they are.
func (t *Tx) PutNoPrefixesUntil(until time.Time) error {
	m, err := t.PoolMeta()
	if err != nil {
		return err
	}
	m.NoPrefixesUntil = until
	return t.putJSON(bState, kPoolMeta, m)
}

// PutEC2Sync records when EC2 was last read and whether a mutation since
// waits for EC2 to confirm it; the other timers are kept as they are.
func (t *Tx) PutEC2Sync(lastDescribe time.Time, confirmNeeded bool) error {
	m, err := t.PoolMeta()
	if err != nil {
		return err
	}
	m.LastEC2Describe, m.ConfirmNeeded = lastDescribe, confirmNeeded
	return t.putJSON(bState, kPoolMeta, m)
}

// PutFullSubnets records subnets found out of addresses, until when; expired
// entries are dropped. The other timers are kept as they are.
func (t *Tx) PutFullSubnets(full map[string]time.Time, now time.Time) error {
	m, err := t.PoolMeta()
	if err != nil {
		return err
	}
	if m.FullSubnets == nil {
		m.FullSubnets = map[string]time.Time{}
	}
	for id, until := range full {
		m.FullSubnets[id] = until
	}
	for id, until := range m.FullSubnets {
		if !now.Before(until) {
			delete(m.FullSubnets, id)
		}
	}
	return t.putJSON(bState, kPoolMeta, m)
}

// ReconcileReport returns the last reconcile's report; ok is false if none.
func (t *Tx) ReconcileReport() (r ReconcileReport, ok bool, err error) {
	ok, err = t.getJSON(bState, kReconcile, &r)
	return r, ok, err
}

// PutReconcileReport replaces the last reconcile's report.
func (t *Tx) PutReconcileReport(r ReconcileReport) error { return t.putJSON(bState, kReconcile, r) }
