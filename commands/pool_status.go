package commands

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"vpc-cni/pool"
	"vpc-cni/reconcile"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// PoolStatus is what `vpcctl pool status` shows; JSON/YAML field names are
// stable and camelCase, durations are strings ("30s"), lists are never null
// and unset times are left out.
type PoolStatus struct {
	Initialized bool             `json:"initialized"`
	StateDir    string           `json:"stateDir"`
	ConfigFile  string           `json:"configFile"`
	Node        *NodeStatus      `json:"node,omitempty"`
	Knobs       []KnobStatus     `json:"knobs"`
	Figures     pool.Figures     `json:"figures"`
	Pending     []pool.Action    `json:"pending"` // what the next reconcile would do
	Excess      *ExcessStatus    `json:"excess,omitempty"`
	Shortfall   *ShortfallStatus `json:"shortfall,omitempty"`
	ENIs        []ENIStatus      `json:"enis"`
	Assignments int              `json:"assignments"`
	Pods        []PodStatus      `json:"pods"` // who holds each assigned address
	Intents     int              `json:"intentsInFlight"`
	GrowBlocked string           `json:"growBlocked,omitempty"`
	// NoProvisioning: why the pool never grows or shrinks (the operator's
	// DISABLE_NETWORK_RESOURCE_PROVISIONING or ENABLE_IMDS_ONLY_MODE).
	NoProvisioning string          `json:"noProvisioning,omitempty"`
	NoPrefixes     string          `json:"noPrefixesUntil,omitempty"` // prefix delegation falls back to single addresses
	LastReconcile  *LastPass       `json:"lastReconcile,omitempty"`
	EC2Reads       *EC2Reads       `json:"ec2Reads,omitempty"`
	NodeRules      *NodeRulesState `json:"nodeRules,omitempty"`
}

// ENIStatus is one ENI with counts per address state.
type ENIStatus struct {
	ID          string      `json:"id"`
	DeviceIndex int         `json:"deviceIndex"`
	Primary     bool        `json:"primary"`
	Ready       bool        `json:"ready"`
	MAC         string      `json:"mac"`
	PrimaryIP   string      `json:"primaryIp"`
	Blocks      int         `json:"blocks"`
	Free        int         `json:"free"`
	Cooling     int         `json:"cooling"`
	Assigned    int         `json:"assigned"`
	Releasing   int         `json:"releasing"`
	Addresses   []AddrState `json:"addresses"`
}

// AddrState is one address and its state.
type AddrState struct {
	IP    string    `json:"ip"`
	Block string    `json:"block"`
	State string    `json:"state"`
	Since time.Time `json:"since"`
	Owner string    `json:"owner,omitempty"` // "<containerID>/<ifName>"
	Pod   string    `json:"pod,omitempty"`   // "<namespace>/<name>" of the owner
}

// PodStatus is one pod interface holding an address.
type PodStatus struct {
	Pod         string    `json:"pod"` // "<namespace>/<name>"; "-" when the runtime passed no pod name
	Namespace   string    `json:"namespace,omitempty"`
	Name        string    `json:"name,omitempty"`
	ContainerID string    `json:"containerId"`
	IfName      string    `json:"ifName"`
	IP          string    `json:"ip"`
	ENIID       string    `json:"eniId"`
	Since       time.Time `json:"since"`
}

// podStatus names the pod of an assignment.
func podStatus(a store.Assignment) PodStatus {
	return PodStatus{Pod: podName(a.PodNamespace, a.PodName), Namespace: a.PodNamespace, Name: a.PodName,
		ContainerID: a.ContainerID, IfName: a.IfName, IP: a.IP.String(), ENIID: a.ENIID, Since: a.Time}
}

// podName is "namespace/name", or "-" for an interface added without
// Kubernetes arguments.
func podName(namespace, name string) string {
	if name == "" {
		return "-"
	}
	return namespace + "/" + name
}

func poolStatusCommand() *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "show the node, its ENIs and addresses, and every knob with its source and the last pass's value",
		Description: `Examples:
   vpcctl pool status
   vpcctl pool status -o wide     # every address
   vpcctl pool status -o json     # for scripts`,
		Flags:  []cli.Flag{stateDirFlag(), outputFlag("table")},
		Before: noArgs,
		Action: func(c *cli.Context) error {
			if _, err := format(c); err != nil {
				return err
			}
			in, err := knobInputs(c)
			if err != nil {
				return err
			}
			st, err := openStateReadOnly(c)
			if err != nil {
				return err
			}
			status, err := loadStatus(st, in, time.Now())
			if err != nil {
				return err
			}
			if !status.Initialized && (c.String("output") == "table" || c.String("output") == "wide") {
				fmt.Fprintf(c.App.Writer, "no reconcile has run in %s yet; run 'vpcctl reconcile' to learn the node and fill the pool\n", st.Dir())
				return nil
			}
			return render(c, status, func(t *table) { statusTable(t, status) })
		},
	}
}

// storedState is what status reads from the store, in one transaction.
type storedState struct {
	node     store.Node
	known    bool
	snap     pool.Snapshot
	settings store.Settings
	waiting  int
	last     *store.ReconcileReport
	meta     store.PoolMeta
}

// loadStatus reads the store and computes the figures with the knobs as
// this invocation resolves them (in: its environment and the file).
func loadStatus(st *store.Store, in settings.Inputs, now time.Time) (PoolStatus, error) {
	s := PoolStatus{StateDir: st.Dir(), ENIs: []ENIStatus{}, Pending: []pool.Action{}, Knobs: []KnobStatus{}, Pods: []PodStatus{}}
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
		return s, asUsage(err)
	}
	s.Knobs = knobStatus(cfg.Values, ss.settings.LastPass)
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
	rules := nodeRulesState(ss.node, in)
	s.NodeRules = &rules
	s.EC2Reads = ec2Reads(ss.node, ss.meta, cfg.EC2Resync)
	plan := pool.Compute(pool.Input{Limits: ss.node.Limits, Config: cfg.Pool, Snapshot: ss.snap, Now: now, Waiting: ss.waiting})
	s.Figures = plan.Figures
	if now.Before(ss.snap.GrowBlockedUntil) {
		s.GrowBlocked = fmt.Sprintf("until %s: %s", ss.snap.GrowBlockedUntil.Format(time.RFC3339), ss.snap.GrowBlockedWhy)
	}
	if why := reconcile.NoProvisioning(cfg); why != "" {
		s.NoProvisioning = why // the pass plans no action
	} else {
		s.Pending = append(s.Pending, plan.Actions...)
	}
	if cfg.Pool.PrefixDelegation && now.Before(ss.snap.NoPrefixesUntil) {
		s.NoPrefixes = ss.snap.NoPrefixesUntil.Format(time.RFC3339)
	}
	pods := map[string]string{}
	for _, p := range s.Pods {
		pods[store.AssignmentKey(p.ContainerID, p.IfName)] = p.Pod
	}
	for _, e := range ss.snap.ENIs {
		s.ENIs = append(s.ENIs, eniStatus(e, pods, cfg.Pool.Cooldown, now))
	}
	s.Excess = excessStatus(plan, cfg.Pool.ReleaseDelay)
	s.Shortfall = shortfallStatus(plan, ss.snap, s.ENIs, now)
	return s, nil
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
	es := ENIStatus{ID: e.ID, DeviceIndex: e.DeviceIndex, Primary: e.Primary(), Ready: e.Ready, MAC: e.MAC,
		PrimaryIP: e.PrimaryIP.String(), Blocks: len(e.Blocks), Addresses: []AddrState{}}
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
