package commands

import (
	"errors"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"vpc-cni/pool"
	"vpc-cni/reconcile"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// PoolStatus is what `vpcctl pool status` shows; JSON/YAML field names are stable.
type PoolStatus struct {
	Initialized   bool                   `json:"initialized"`
	StateDir      string                 `json:"stateDir"`
	Node          *store.Node            `json:"node,omitempty"`
	Targets       []settings.Value       `json:"targets"`
	Figures       pool.Figures           `json:"figures"`
	Pending       []pool.Action          `json:"pending"` // what the next reconcile would do
	ENIs          []ENIStatus            `json:"enis"`
	Assignments   int                    `json:"assignments"`
	Intents       int                    `json:"intentsInFlight"`
	GrowBlocked   string                 `json:"growBlocked,omitempty"`
	LastReconcile *store.ReconcileReport `json:"lastReconcile,omitempty"`
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
	Owner string    `json:"owner,omitempty"`
}

func poolStatusCommand() *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "show the node, its ENIs and addresses, and every target with its source",
		Description: `Examples:
   vpcctl pool status
   vpcctl pool status -o wide     # every address
   vpcctl pool status -o json     # for scripts`,
		Flags:  []cli.Flag{outputFlag("table")},
		Before: noArgs,
		Action: func(c *cli.Context) error {
			if _, err := format(c); err != nil {
				return err
			}
			st, err := openStore(c)
			if err != nil {
				return err
			}
			status, err := loadStatus(st, time.Now())
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

// loadStatus reads everything in one transaction and computes the figures.
func loadStatus(st *store.Store, now time.Time) (PoolStatus, error) {
	s := PoolStatus{StateDir: st.Dir(), ENIs: []ENIStatus{}, Pending: []pool.Action{}}
	var snap pool.Snapshot
	var stored store.Settings
	var known bool
	var node store.Node
	err := st.View(func(tx *store.Tx) error {
		var err error
		if node, known, err = tx.Node(); err != nil {
			return err
		}
		if snap, err = tx.Snapshot(); err != nil {
			return err
		}
		if stored, err = tx.Settings(); err != nil {
			return err
		}
		as, err := tx.Assignments()
		s.Assignments = len(as)
		if err != nil {
			return err
		}
		in, err := tx.Intents()
		s.Intents = len(in)
		if err != nil {
			return err
		}
		if r, ok, err := tx.ReconcileReport(); err != nil {
			return err
		} else if ok {
			s.LastReconcile = &r
		}
		return nil
	})
	if err != nil && !errors.Is(err, store.ErrNotInitialized) {
		return s, err
	}
	cfg, err := settings.Resolve(envLookup, reconcile.OverridesOf(stored), settings.Overrides{})
	if err != nil {
		return s, asUsage(err)
	}
	s.Targets = cfg.Values
	if !known {
		return s, nil
	}
	s.Initialized, s.Node = true, &node
	plan := pool.Compute(pool.Input{Limits: node.Limits, Config: cfg.Pool, Snapshot: snap, Now: now})
	s.Figures, s.Pending = plan.Figures, append(s.Pending, plan.Actions...)
	if now.Before(snap.GrowBlockedUntil) {
		s.GrowBlocked = fmt.Sprintf("until %s: %s", snap.GrowBlockedUntil.Format(time.RFC3339), snap.GrowBlockedWhy)
	}
	for _, e := range snap.ENIs {
		s.ENIs = append(s.ENIs, eniStatus(e, cfg.Pool.Cooldown, now))
	}
	return s, nil
}

func eniStatus(e pool.ENI, cooldown time.Duration, now time.Time) ENIStatus {
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
				State: string(state), Since: a.Since, Owner: a.Owner})
		}
	}
	return es
}
