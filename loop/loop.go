// Package loop is the DaemonSet container's loop: a pass every interval
// until the context ends, /metrics and /healthz served from the snapshot it
// takes, and the network policy agent's start-up question answered.
package loop

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"time"

	"vpc-cni/settings"
	"vpc-cni/store"
)

// SnapshotEvery is how often the loop refreshes /metrics between passes,
// so the counts follow pods' ADDs and DELs: one brief shared open of the
// state file, whatever the number of scrapes.
const SnapshotEvery = 15 * time.Second

// Config is what the loop runs and serves.
type Config struct {
	Every        time.Duration
	Pass         func() error // one pass; a failure is logged and the loop goes on
	MetricsAt    string       // IP:PORT for /metrics and /healthz, "" for none (checked by Addr)
	HealthAt     string       // IP:PORT for /healthz alone, "" for none
	PolicySocket string       // the unix socket of the policy agent's GetNetworkPolicyConfigs
	StateDir     string
	Env          settings.Lookup                 // DISABLE_METRICS
	Inputs       func() (settings.Inputs, error) // the knobs' inputs as they are now
	OpenState    func() (*store.Store, error)    // the state, read-only
	Log          func(level slog.Level, msg string)
}

// Run runs a pass every interval plus a random delay of up to one more
// interval, until ctx ends: the loop of a DaemonSet's container, where no
// systemd timer runs it. The delay is the timer's RandomizedDelaySec: nodes
// started together would otherwise pass in step and overflow the account's
// EC2 buckets (docs/targets.md, cluster scale). A failed pass is reported
// and the loop goes on (a ConfigMap or a credential may be fixed
// meanwhile); pods never wait for it, as the plugin grows the pool itself.
// With MetricsAt it serves the snapshot it takes after each pass (and every
// SnapshotEvery between them). With NETWORK_POLICY_ENFORCING_MODE set it
// answers the policy agent's start-up question, as ipamd does.
func Run(ctx context.Context, cfg Config) error {
	m, err := startMetrics(ctx, cfg)
	if err != nil {
		return err
	}
	if err := startPolicyConfig(ctx, cfg); err != nil {
		return err
	}
	refresh := time.NewTicker(SnapshotEvery)
	defer refresh.Stop()
	for {
		err := cfg.Pass()
		if err != nil {
			cfg.Log(slog.LevelError, "reconcile: "+err.Error())
		}
		m.passed(err)
		if !m.wait(ctx, cfg.Every+rand.N(cfg.Every), refresh.C) {
			return nil
		}
	}
}

// wait refreshes the snapshot on each tick until d has passed (true) or
// ctx ends (false).
func (m *served) wait(ctx context.Context, d time.Duration, tick <-chan time.Time) bool {
	wait := time.NewTimer(d)
	defer wait.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-tick:
			m.snapshot()
		case <-wait.C:
			return true
		}
	}
}
