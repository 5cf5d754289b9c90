package loop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"vpc-cni/internal/usage"
	"vpc-cni/metrics"
	"vpc-cni/status"
	"vpc-cni/store"
)

// DisableMetricsEnv is the reference's switch for its metrics port, honoured
// by the loop whatever MetricsAt says.
const DisableMetricsEnv = "DISABLE_METRICS"

// served is what the loop serves: the snapshot it takes (when it serves
// /metrics), the health of its passes. A nil *served serves nothing.
type served struct {
	cfg     Config
	metrics bool // /metrics is served: snapshots are taken
	snap    metrics.Snapshot
	health  metrics.Health
	lastErr string // the last snapshot error logged, so a lasting one is logged once
}

// startMetrics starts serving on MetricsAt (after a first snapshot; not
// with DISABLE_METRICS=true) and HealthAt; nil, nil when neither serves. A
// bad DISABLE_METRICS value is a usage error; a bind that fails is retried
// in the background, so the passes start at once.
func startMetrics(ctx context.Context, cfg Config) (*served, error) {
	metricsAt := cfg.MetricsAt
	if metricsAt != "" {
		off, err := metricsDisabled(cfg)
		if err != nil {
			return nil, err
		}
		if off {
			cfg.Log(slog.LevelWarn, fmt.Sprintf("metrics: %s=true: /metrics and /healthz are not served on %s", DisableMetricsEnv, metricsAt))
			metricsAt = ""
		}
	}
	if metricsAt == "" && cfg.HealthAt == "" {
		return nil, nil
	}
	m := &served{cfg: cfg, metrics: metricsAt != ""}
	if m.metrics {
		m.snapshot()
		go m.server(metricsAt, "/metrics and /healthz", metrics.Handler(&m.snap, &m.health), metrics.MetricsLimits).Run(ctx)
	}
	if cfg.HealthAt != "" {
		go m.server(cfg.HealthAt, "/healthz", metrics.HealthHandler(&m.health), metrics.HealthLimits).Run(ctx)
	}
	return m, nil
}

// server serves what (its words in the log) on addr.
func (m *served) server(addr, what string, h http.Handler, lim metrics.Limits) *metrics.Server {
	return &metrics.Server{Addr: addr, Handler: h, Limits: lim,
		Listening: func(a net.Addr) {
			m.cfg.Log(slog.LevelInfo, fmt.Sprintf("serving %s on http://%s", what, a))
		},
		Failed: bindReporter(m.cfg, addr, what),
	}
}

// Addr checks IP:PORT given as flag (the IP may be empty, for every
// address, or bracketed, so the chart's "[$(HOST_IP)]:61678" fits either
// family); "" stays "".
func Addr(flag, raw string) (string, error) {
	if raw == "" {
		return "", nil
	}
	host, port, err := net.SplitHostPort(raw)
	if err == nil {
		_, err = strconv.ParseUint(port, 10, 16)
	}
	if err == nil && host != "" {
		var ip netip.Addr
		if ip, err = netip.ParseAddr(host); err == nil {
			host = ip.String()
		}
	}
	if err != nil {
		return "", usage.Errorf("%s %s: want IP:PORT, e.g. 127.0.0.1:61678 or [fd00::1]:61678 (%v)", flag, raw, err)
	}
	return net.JoinHostPort(host, port), nil
}

func metricsDisabled(cfg Config) (bool, error) {
	v, ok := cfg.Env(DisableMetricsEnv)
	if !ok || v == "" {
		return false, nil
	}
	off, err := strconv.ParseBool(v)
	if err != nil {
		return false, usage.Errorf("%s=%q (env): want true or false", DisableMetricsEnv, v)
	}
	return off, nil
}

// passed records a pass's outcome for /healthz and refreshes /metrics.
func (m *served) passed(err error) {
	if m == nil {
		return
	}
	m.health.Record(err)
	m.snapshot()
}

// snapshot reads the state once and makes it what scrapes get; on failure
// scrapes keep the previous one, and the error is logged once.
func (m *served) snapshot() {
	if m == nil || !m.metrics {
		return
	}
	err := m.take()
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if msg != "" && msg != m.lastErr {
		m.cfg.Log(slog.LevelWarn, fmt.Sprintf("metrics: %s; /metrics serves the last good snapshot", msg))
	}
	m.lastErr = msg
}

func (m *served) take() error {
	knobs, err := m.cfg.Inputs()
	if err != nil {
		return err
	}
	st, err := m.cfg.OpenState()
	if err != nil {
		return err
	}
	in, err := status.MetricsInput(st, knobs, time.Now())
	if err != nil {
		return err
	}
	return m.snap.Take(in)
}

// bindReporter logs every failed bind with its next try, and records the
// first of a run in the node's events (`vpcctl events`), where an operator
// looking for the missing metrics (or probe) finds it.
func bindReporter(cfg Config, addr, what string) func(error, time.Duration) {
	var mu sync.Mutex
	last := ""
	return func(err error, retry time.Duration) {
		cfg.Log(slog.LevelWarn, fmt.Sprintf("metrics: %v; %s not served; retrying in %s", err, isAre(what), retry))
		mu.Lock()
		defer mu.Unlock()
		if err.Error() == last {
			return
		}
		last = err.Error()
		msg := fmt.Sprintf("cannot serve %s on %s: %v; retrying with back-off, passes go on", what, addr, err)
		kind := "metrics-listen-failed"
		if what == "/healthz" {
			kind = "health-listen-failed"
		}
		if rerr := recordEvent(cfg, kind, msg); rerr != nil {
			cfg.Log(slog.LevelWarn, fmt.Sprintf("metrics: recording the event: %v", rerr))
		}
	}
}

// isAre is what with its verb: "/healthz is", "/metrics and /healthz are".
func isAre(what string) string {
	if strings.Contains(what, " and ") {
		return what + " are"
	}
	return what + " is"
}

// recordEvent appends one event to an existing state file; it never
// creates one (only a pass does).
func recordEvent(cfg Config, kind, msg string) error {
	if _, err := cfg.OpenState(); err != nil {
		if errors.Is(err, store.ErrNotInitialized) {
			return nil
		}
		return err
	}
	st, err := store.Open(cfg.StateDir, store.Options{Lazy: true})
	if err != nil {
		return err
	}
	return st.Update(func(tx *store.Tx) error {
		return tx.AddEvent(store.Event{Time: time.Now(), Kind: kind, Message: msg})
	})
}
