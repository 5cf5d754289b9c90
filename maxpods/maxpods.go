// Package maxpods answers `vpcctl max-pods`: the node's true pod capacity,
// the number the kubelet's maxPods should be. Online it reads the node's
// live state (limits, ENIs and their classes, as the last reconcile
// recorded them) and the knobs as every vpc-cni process resolves them;
// offline it reads the built-in instance table. The rule itself is
// pool.PodCapacity; this package finds its inputs and renders the values to
// paste into Karpenter, nodeadm or a kubelet drop-in.
package maxpods

import (
	"context"
	"fmt"
	"strings"

	"vpc-cni/cloud"
	"vpc-cni/internal/suggest"
	"vpc-cni/internal/usage"
	"vpc-cni/pool"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// Sources of a report.
const (
	FromNode  = "node"  // the state file, as the last reconcile left it
	FromTable = "table" // the built-in instance table (--instance-type)
)

// Report is the node's pod capacity, how it was reached, and where to put it.
type Report struct {
	Source       string   `json:"source"`
	InstanceType string   `json:"instanceType"`
	Hypervisor   string   `json:"hypervisor,omitempty"`
	Limits       Limits   `json:"limits"`
	NotOurs      []string `json:"notOurs,omitempty"` // card 0 ENIs that are not vpc-cni's
	// Profiles: the network profiles the node serves; each holds at least
	// one ENI, so the default pool's pods fit on at most DefaultPoolPods
	// addresses (max pods is unchanged: every pod still takes one address).
	Profiles        []string      `json:"profiles,omitempty"`
	DefaultPoolPods int           `json:"defaultPoolPods,omitempty"`
	Capacity        pool.Capacity `json:"capacity"`
	MaxPods         int           `json:"maxPods"`
	Karpenter       Paste         `json:"karpenter"`
	Nodeadm         Paste         `json:"nodeadm"`
}

// Limits are the instance type's, as the report shows them.
type Limits struct {
	MaxENIs    int `json:"maxEnis"` // on card 0
	IPv4PerENI int `json:"ipv4PerEni"`
	VCPUs      int `json:"vcpus,omitempty"` // 0: unknown
}

// Paste is where a value goes in another tool's configuration.
type Paste struct {
	Field   string `json:"field"`
	MaxPods int    `json:"maxPods"`
	YAML    string `json:"yaml"`
}

// Online is the capacity of the node whose state st holds, with the knobs
// as in resolves them under the stored overrides (as `pool status`).
func Online(st *store.Store, in settings.Inputs) (Report, error) {
	var (
		node  store.Node
		known bool
		snap  pool.Snapshot
		set   store.Settings
	)
	err := st.View(func(tx *store.Tx) (err error) {
		if node, known, err = tx.Node(); err != nil || !known {
			return err
		}
		if snap, err = tx.Snapshot(); err != nil {
			return err
		}
		set, err = tx.Settings()
		return err
	})
	if err != nil {
		return Report{}, err
	}
	if !known {
		return Report{}, fmt.Errorf("no reconcile has run in %s yet, so the node's ENIs are unknown: run 'vpcctl reconcile', or pass --instance-type", st.Dir())
	}
	cfg, err := settings.Resolve(set.Overrides, in)
	if err != nil {
		return Report{}, usage.Wrap(err)
	}
	var notOurs []string
	for _, e := range snap.ENIs {
		if e.NotOurs() && e.Card == 0 {
			notOurs = append(notOurs, e.ID+" ("+e.Why+")")
		}
	}
	return withProfiles(report(FromNode, node.InstanceType, node.Hypervisor, node.Limits, cfg.Pool, notOurs), cfg), nil
}

// Offline is the capacity of an instance type from the built-in table, with
// the knobs as in resolves them (no store: no overrides, no ENIs not ours).
// An unknown type is a usage error naming the closest known ones.
func Offline(instanceType string, in settings.Inputs) (Report, error) {
	cfg, err := settings.Resolve(settings.Overrides{}, in)
	if err != nil {
		return Report{}, usage.Wrap(err)
	}
	lim, info, err := cloud.BuiltinLimits(instanceType)
	if cloud.IsKind(err, cloud.KindNotFound) {
		return Report{}, usage.Errorf("instance type %q is not in vpc-cni's built-in table%s", instanceType, closest(instanceType))
	}
	if err != nil {
		return Report{}, err
	}
	return withProfiles(report(FromTable, instanceType, info.Hypervisor, lim, cfg.Pool, nil), cfg), nil
}

func report(source, typ, hypervisor string, l pool.Limits, c pool.Config, notOurs []string) Report {
	on := pool.OnNode(c, cloud.PrefixCapable(hypervisor))
	capacity := pool.PodCapacity(l, on, len(notOurs))
	if on.PrefixDelegation != c.PrefixDelegation {
		capacity.Notes = append(capacity.Notes, fmt.Sprintf("ENABLE_PREFIX_DELEGATION is ignored: a %s instance cannot hold /28 prefixes", hypervisor))
	}
	n := capacity.MaxPods
	return Report{
		Source: source, InstanceType: typ, Hypervisor: hypervisor, NotOurs: notOurs, Capacity: capacity, MaxPods: n,
		Limits:    Limits{MaxENIs: l.MaxENIs, IPv4PerENI: l.IPv4PerENI, VCPUs: l.VCPUs},
		Karpenter: Paste{"EC2NodeClass.spec.kubelet.maxPods", n, fmt.Sprintf("spec:\n  kubelet:\n    maxPods: %d\n", n)},
		Nodeadm: Paste{"NodeConfig.spec.kubelet.config.maxPods", n, fmt.Sprintf(
			"apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n      maxPods: %d\n", n)},
	}
}

// withProfiles counts the ENI slots the node's network profiles take: one
// each at least, out of the default pool's reach.
func withProfiles(r Report, cfg settings.Effective) Report {
	for _, p := range cfg.Profiles {
		if p.Allowed {
			r.Profiles = append(r.Profiles, string(p.Name))
		}
	}
	if len(r.Profiles) == 0 {
		return r
	}
	c := r.Capacity
	enis := max(c.ENIs-len(r.Profiles), 0)
	r.DefaultPoolPods = enis * c.SlotsPerENI * c.PerSlot
	r.Capacity.Notes = append(r.Capacity.Notes, fmt.Sprintf(
		"network profiles %s: each holds at least one ENI, so pods without a profile fit on %d ENIs (%d addresses); max pods counts every pool's addresses",
		strings.Join(r.Profiles, ", "), enis, r.DefaultPoolPods))
	return r
}

// closest names up to three known types a few edits away, else the sizes
// of the same family.
func closest(typ string) string {
	names := cloud.BuiltinTypes()
	var near []string
	for d := 1; d <= 3 && len(near) < 3; d++ {
		for _, n := range names {
			if len(near) < 3 && suggest.Distance(typ, n) == d {
				near = append(near, n)
			}
		}
	}
	if len(near) == 0 {
		family, _, _ := strings.Cut(typ, ".")
		for _, n := range names {
			if strings.HasPrefix(n, family+".") {
				near = append(near, n)
			}
		}
	}
	if len(near) == 0 {
		return "; pass a type EC2 knows, e.g. m5.large"
	}
	return "; did you mean " + strings.Join(near, ", ") + "?"
}

// FromIMDS: the built-in table for the instance type IMDS names, the state
// file being another instance's or none (ThisInstance).
const FromIMDS = "imds"

// ThisInstance is the capacity of the instance IMDS names, whatever the
// state file says: the node's state when it is this instance's (its ENIs
// that are not ours count), else the built-in table for IMDS's instance
// type. The boot unit uses it: a state dir baked into an image or copied
// from another node holds another type's limits.
func ThisInstance(ctx context.Context, st *store.Store, in settings.Inputs) (Report, error) {
	cl, err := cloud.New(ctx, cloud.Options{UserAgent: "vpcctl-max-pods", HTTPTimeout: cloud.AttemptTimeout(ctx)})
	if err != nil {
		return Report{}, err
	}
	id, err := cl.Identity(ctx)
	if err != nil {
		return Report{}, fmt.Errorf("reading this instance's type from IMDS: %w", err)
	}
	var node store.Node
	if st != nil {
		err = st.View(func(tx *store.Tx) (err error) { node, _, err = tx.Node(); return err })
	}
	if err == nil && node.InstanceID == id.InstanceID && strings.EqualFold(node.PrimaryMAC, id.PrimaryMAC) {
		return Online(st, in)
	}
	rep, err := Offline(id.InstanceType, in)
	rep.Source = FromIMDS
	return rep, err
}
