package commands

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"vpc-cni/metrics"
	"vpc-cni/status"
	"vpc-cni/store"
)

// metricsListenFlag is where the loop serves /metrics and /healthz.
var metricsListenFlag = &cli.StringFlag{
	Name: "metrics-listen", EnvVars: []string{"VPC_CNI_METRICS_LISTEN"},
	Usage: "with --every: serve /metrics (Prometheus text) and /healthz on this IP:PORT (the chart: the node's primary address, or 127.0.0.1, port 61678); DISABLE_METRICS=true turns it off",
}

// healthListenFlag is where the loop answers /healthz alone, on a listener
// of its own: the connections that fill the metrics port (scrapers, or any
// pod on bind: primary) cannot keep the kubelet's probe waiting there.
var healthListenFlag = &cli.StringFlag{
	Name: "health-listen", EnvVars: []string{"VPC_CNI_HEALTH_LISTEN"},
	Usage: "with --every: answer /healthz alone on this IP:PORT, apart from --metrics-listen's connections (the chart: 127.0.0.1:61680, the kubelet's probe, which no pod can reach); DISABLE_METRICS leaves it on",
}

// disableMetricsEnv is the reference's switch for its metrics port, honoured
// by the loop whatever --metrics-listen says.
const disableMetricsEnv = "DISABLE_METRICS"

// snapshotEvery is how often the loop refreshes /metrics between passes,
// so the counts follow pods' ADDs and DELs: one brief shared open of the
// state file, whatever the number of scrapes.
const snapshotEvery = 15 * time.Second

// loopMetrics is what the loop serves: the snapshot it takes (when it
// serves /metrics), the health of its passes. A nil *loopMetrics serves
// nothing.
type loopMetrics struct {
	c       *cli.Context
	metrics bool // /metrics is served: snapshots are taken
	snap    metrics.Snapshot
	health  metrics.Health
	lastErr string // the last snapshot error logged, so a lasting one is logged once
}

// startMetrics starts serving on --metrics-listen (after a first snapshot;
// not with DISABLE_METRICS=true) and --health-listen; nil, nil when neither
// serves. A bad address or DISABLE_METRICS value is a usage error; a bind
// that fails is retried in the background, so the passes start at once.
func startMetrics(ctx context.Context, c *cli.Context) (*loopMetrics, error) {
	metricsAt, err := listenAddr(c, metricsListenFlag)
	if err != nil {
		return nil, err
	}
	healthAt, err := listenAddr(c, healthListenFlag)
	if err != nil {
		return nil, err
	}
	if metricsAt != "" {
		off, err := metricsDisabled()
		if err != nil {
			return nil, err
		}
		if off {
			stderrLine(c, slog.LevelWarn, fmt.Sprintf("metrics: %s=true: /metrics and /healthz are not served on %s", disableMetricsEnv, metricsAt))
			metricsAt = ""
		}
	}
	if metricsAt == "" && healthAt == "" {
		return nil, nil
	}
	m := &loopMetrics{c: c, metrics: metricsAt != ""}
	if m.metrics {
		m.snapshot()
		go m.server(metricsAt, "/metrics and /healthz", metrics.Handler(&m.snap, &m.health), metrics.MetricsLimits).Run(ctx)
	}
	if healthAt != "" {
		go m.server(healthAt, "/healthz", metrics.HealthHandler(&m.health), metrics.HealthLimits).Run(ctx)
	}
	return m, nil
}

// server serves what (its words in the log) on addr.
func (m *loopMetrics) server(addr, what string, h http.Handler, lim metrics.Limits) *metrics.Server {
	c := m.c
	return &metrics.Server{Addr: addr, Handler: h, Limits: lim,
		Listening: func(a net.Addr) {
			stderrLine(c, slog.LevelInfo, fmt.Sprintf("serving %s on http://%s", what, a))
		},
		Failed: bindReporter(c, addr, what),
	}
}

// listenAddr is flag's checked address, "" when unset.
func listenAddr(c *cli.Context, flag *cli.StringFlag) (string, error) {
	raw := c.String(flag.Name)
	if raw == "" {
		return "", nil
	}
	return metricsAddr("--"+flag.Name, raw)
}

// metricsAddr checks IP:PORT (the IP may be empty, for every address, or
// bracketed, so the chart's "[$(HOST_IP)]:61678" fits either family).
func metricsAddr(flag, raw string) (string, error) {
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
		return "", usagef("%s %s: want IP:PORT, e.g. 127.0.0.1:61678 or [fd00::1]:61678 (%v)", flag, raw, err)
	}
	return net.JoinHostPort(host, port), nil
}

func metricsDisabled() (bool, error) {
	v, ok := os.LookupEnv(disableMetricsEnv)
	if !ok || v == "" {
		return false, nil
	}
	off, err := strconv.ParseBool(v)
	if err != nil {
		return false, usagef("%s=%q (env): want true or false", disableMetricsEnv, v)
	}
	return off, nil
}

// passed records a pass's outcome for /healthz and refreshes /metrics.
func (m *loopMetrics) passed(err error) {
	if m == nil {
		return
	}
	m.health.Record(err)
	m.snapshot()
}

// snapshot reads the state once and makes it what scrapes get; on failure
// scrapes keep the previous one, and the error is logged once.
func (m *loopMetrics) snapshot() {
	if m == nil || !m.metrics {
		return
	}
	err := m.take()
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if msg != "" && msg != m.lastErr {
		stderrLine(m.c, slog.LevelWarn, fmt.Sprintf("metrics: %s; /metrics serves the last good snapshot", msg))
	}
	m.lastErr = msg
}

func (m *loopMetrics) take() error {
	knobs, err := knobInputs(m.c)
	if err != nil {
		return err
	}
	st, err := openStateReadOnly(m.c)
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
func bindReporter(c *cli.Context, addr, what string) func(error, time.Duration) {
	var mu sync.Mutex
	last := ""
	return func(err error, retry time.Duration) {
		stderrLine(c, slog.LevelWarn, fmt.Sprintf("metrics: %v; %s not served; retrying in %s", err, served(what), retry))
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
		if rerr := recordEvent(c, kind, msg); rerr != nil {
			stderrLine(c, slog.LevelWarn, fmt.Sprintf("metrics: recording the event: %v", rerr))
		}
	}
}

// served is what with its verb: "/healthz is", "/metrics and /healthz are".
func served(what string) string {
	if strings.Contains(what, " and ") {
		return what + " are"
	}
	return what + " is"
}

// recordEvent appends one event to an existing state file; it never
// creates one (only a pass does).
func recordEvent(c *cli.Context, kind, msg string) error {
	if _, err := openStateReadOnly(c); err != nil {
		if errors.Is(err, store.ErrNotInitialized) {
			return nil
		}
		return err
	}
	st, err := store.Open(stateDir(c), store.Options{Lazy: true})
	if err != nil {
		return err
	}
	return st.Update(func(tx *store.Tx) error {
		return tx.AddEvent(store.Event{Time: time.Now(), Kind: kind, Message: msg})
	})
}
