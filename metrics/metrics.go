// Package metrics renders the node's pool as Prometheus text exposition
// format: `vpcctl metrics --file` (or every reconcile, given
// VPC_CNI_METRICS_FILE) writes it for node-exporter's textfile collector, and
// the DaemonSet's loop (`vpcctl reconcile --every D --metrics-listen ADDR`)
// serves it on /metrics, with /healthz (serve.go). Besides its own vpc_cni_*
// series it has aws-node's awscni_* names that dashboards read (awscni.go).
//
// The text is rendered by hand rather than with client_golang: this package
// is linked into the one binary that every plugin run loads, and
// Prometheus's parser checks the output instead (e2e/metrics_test.go, with
// expfmt as a test-only dependency; commands/binary_deps_test.go keeps it
// out of the binary).
package metrics

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"vpc-cni/internal/atomicfile"
	"vpc-cni/pool"
)

// ENI is one ENI's counts per address state.
type ENI struct {
	ID                                 string
	DeviceIndex                        int
	Free, Cooling, Assigned, Releasing int
}

// Input is what the metrics show.
type Input struct {
	Figures       pool.Figures
	ENIs          []ENI
	Assignments   int
	Intents       int
	GrowBlocked   bool
	Full          pool.Fullness    // a full node: ready, its ADDs refused with code 11
	Counters      map[string]int64 // monotonic, from the store
	LastReconcile time.Time
	LastDuration  time.Duration
	LastCalls     map[string]int // EC2 calls of the last pass, by action
	LastFailed    bool
	Reference     Reference // the reference's series (awscni_*)
	IPv6          *IPv6     // the IPv6 pool; nil on an IPv4-only node
}

// Render writes the exposition text; names are stable for dashboards.
func Render(w io.Writer, in Input) error {
	m := &writer{w: w}
	f := in.Figures
	m.gauge("vpc_cni_enis", "ENIs attached to the node", float64(f.ENIs))
	m.gauge("vpc_cni_enis_max", "ENIs the node may use: min(MAX_ENI, instance limit)", float64(f.MaxENIs))
	m.gauge("vpc_cni_max_pods", "pod addresses the node may hold", float64(f.MaxPods))
	m.header("vpc_cni_addresses", "gauge", "pod addresses held by the node, by state")
	for _, s := range []struct {
		state string
		n     int
	}{{"free", f.Free}, {"cooling", f.Cooling}, {"assigned", f.Assigned}, {"releasing", f.Releasing}} {
		m.sample("vpc_cni_addresses", fmt.Sprintf(`state=%q`, s.state), float64(s.n))
	}
	m.gauge("vpc_cni_shortfall_addresses", "addresses the targets ask for beyond what the node holds", float64(f.Shortfall))
	m.gauge("vpc_cni_excess_addresses", "addresses the next pass would release", float64(f.Excess))
	m.gauge("vpc_cni_assignments", "pods holding an address", float64(in.Assignments))
	m.gauge("vpc_cni_pods_waiting", "ADDs waiting for an inline grow right now", float64(f.Waiting))
	m.gauge("vpc_cni_intents_in_flight", "EC2 mutations recorded but not yet settled", float64(in.Intents))
	m.gauge("vpc_cni_grow_blocked", "1 while growth is backed off (subnet exhausted)", boolf(in.GrowBlocked))
	m.full(in.Full)
	m.perENI(in.ENIs)
	m.ipv6(in.IPv6)
	m.reconcile(in)
	m.header("vpc_cni_reconcile_failures_total", "counter", "reconcile passes that failed; the last error is in `vpcctl pool status` and `vpcctl events`")
	m.sample("vpc_cni_reconcile_failures_total", "", float64(in.Counters["reconcile_failed"]))
	m.counters(in.Counters)
	m.reference(in)
	return m.err
}

func (m *writer) perENI(enis []ENI) {
	m.header("vpc_cni_eni_addresses", "gauge", "pod addresses per ENI and state")
	for _, e := range enis {
		for _, s := range []struct {
			state string
			n     int
		}{{"free", e.Free}, {"cooling", e.Cooling}, {"assigned", e.Assigned}, {"releasing", e.Releasing}} {
			m.sample("vpc_cni_eni_addresses", fmt.Sprintf(`eni=%q,device="%d",state=%q`, e.ID, e.DeviceIndex, s.state), float64(s.n))
		}
	}
}

func (m *writer) reconcile(in Input) {
	if in.LastReconcile.IsZero() {
		return
	}
	m.gauge("vpc_cni_last_reconcile_timestamp_seconds", "when the last reconcile pass started", float64(in.LastReconcile.Unix()))
	m.gauge("vpc_cni_last_reconcile_duration_seconds", "how long the last reconcile pass took", in.LastDuration.Seconds())
	m.gauge("vpc_cni_last_reconcile_failed", "1 if the last reconcile pass failed", boolf(in.LastFailed))
	m.header("vpc_cni_last_reconcile_ec2_calls", "gauge", "EC2 calls of the last reconcile pass, by action")
	for _, action := range sortedKeys(in.LastCalls) {
		m.sample("vpc_cni_last_reconcile_ec2_calls", fmt.Sprintf(`action=%q`, action), float64(in.LastCalls[action]))
	}
}

// counters exports the store's counters (ADDs, DELs, actions, findings).
func (m *writer) counters(c map[string]int64) {
	m.header("vpc_cni_events_total", "counter", "events counted in the node state, by name")
	names := make([]string, 0, len(c))
	for k := range c {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		m.sample("vpc_cni_events_total", fmt.Sprintf(`name=%q`, k), float64(c[k]))
	}
}

// WriteFile replaces path atomically, as the textfile collector needs: it
// never reads a half-written file.
func WriteFile(path string, in Input) error {
	var b bytes.Buffer
	if err := Render(&b, in); err != nil {
		return err
	}
	if err := atomicfile.Write(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("metrics file %s: %w", path, err)
	}
	return nil
}

type writer struct {
	w   io.Writer
	err error
}

func (m *writer) printf(format string, args ...any) {
	if m.err == nil {
		_, m.err = fmt.Fprintf(m.w, format, args...)
	}
}

func (m *writer) header(name, kind, help string) {
	m.printf("# HELP %s %s\n# TYPE %s %s\n", name, help, name, kind)
}

func (m *writer) sample(name, labels string, v float64) {
	if labels != "" {
		name += "{" + strings.TrimSpace(labels) + "}"
	}
	m.printf("%s %s\n", name, strconv.FormatFloat(v, 'f', -1, 64))
}

// full is a state set: 1 on the limit that makes the node full, 0 on the
// others, all 0 when a pod arriving now would get an address.
func (m *writer) full(f pool.Fullness) {
	m.header("vpc_cni_pool_full", "gauge", "1 while no pod address can be had (the node stays ready; ADDs fail with code 11), by what is full")
	for _, l := range pool.AllLimits {
		m.sample("vpc_cni_pool_full", fmt.Sprintf(`limit=%q`, l), boolf(f.Full && f.Limit == l))
	}
}

func (m *writer) gauge(name, help string, v float64) {
	m.header(name, "gauge", help)
	m.sample(name, "", v)
}

func boolf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
