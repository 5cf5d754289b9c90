package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"vpc-cni/internal/testsupport/promtext"
)

// After a known sequence (settle at WARM_IP_TARGET=3, two ADDs, one DEL, a
// pass) Prometheus's own parser reads `vpcctl metrics` and the textfile the
// pass wrote, and they hold the values that sequence must leave.
func TestPrivilegedMetricsParseWithPrometheus(t *testing.T) {
	w := newWorld(t, worldOpts{instanceType: "t3.medium", env: []string{"WARM_IP_TARGET=3"}})
	conf := mustJSON(t, w.conf(nil))
	a, b := w.newPod("metrics-a"), w.newPod("metrics-b")
	w.add(a, conf)
	w.add(b, conf)
	w.del(b, conf)
	prom := filepath.Join(t.TempDir(), "vpc_cni.prom")
	w.reconcile("VPC_CNI_METRICS_FILE=" + prom)

	text, err := os.ReadFile(prom)
	if err != nil {
		t.Fatal(err)
	}
	printed := w.vpcctl(nil, "metrics")
	if printed.err != nil {
		t.Fatalf("vpcctl metrics: %v\n%s", printed.err, printed.stderr)
	}
	want := map[string]float64{
		`vpc_cni_addresses{state="free"}`:                                     3, // the pass refilled to the target
		`vpc_cni_addresses{state="assigned"}`:                                 1,
		`vpc_cni_addresses{state="cooling"}`:                                  1, // b's, within IP_COOLDOWN_PERIOD
		`vpc_cni_assignments`:                                                 1,
		`vpc_cni_enis`:                                                        1,
		`vpc_cni_events_total{name="cni_adds"}`:                               2,
		`vpc_cni_events_total{name="cni_dels"}`:                               1,
		`vpc_cni_last_reconcile_failed`:                                       0,
		`vpc_cni_last_reconcile_ec2_calls{action="AssignPrivateIpAddresses"}`: 1,
	}
	for name, src := range map[string][]byte{"textfile": text, "vpcctl metrics": printed.stdout} {
		got := parseProm(t, name, src)
		for k, v := range want {
			if g, ok := got[k]; !ok || g != v {
				t.Errorf("%s: %s = %v (present %v), want %v", name, k, g, ok, v)
			}
		}
	}
}

// parseProm reads the exposition text with Prometheus's parser.
func parseProm(t *testing.T, name string, text []byte) map[string]float64 {
	return promtext.Parse(t, name, text)
}

// In IPv6 and dual-stack modes `vpcctl metrics` has the IPv6 pool's series
// and the reference's totals as it counts them (2^48 per /80 in IPv6 mode;
// the IPv4 pool's in dual-stack mode), read by Prometheus's parser.
func TestPrivilegedMetricsIPv6AndDualStackParseWithPrometheus(t *testing.T) {
	for _, tc := range []struct {
		name  string
		env   []string
		total func(map[string]float64) float64
	}{
		{"ipv6", ipv6Env, func(map[string]float64) float64 { return 1 << 48 }},
		{"dual-stack", dualEnv, func(got map[string]float64) float64 {
			return got[`vpc_cni_addresses{state="free"}`] + got[`vpc_cni_addresses{state="assigned"}`] + got[`vpc_cni_addresses{state="cooling"}`]
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, worldOpts{instanceType: "t3.medium", env: tc.env})
			rt := w.runtime(conflist(w.conf(nil)))
			a, b := w.newPod("m6-a"), w.newPod("m6-b")
			for _, p := range []*pod{a, b} {
				if _, err := rt.add(p, nil); err != nil {
					t.Fatalf("ADD %s: %v", p.name, err)
				}
			}
			if err := rt.del(b, nil); err != nil {
				t.Fatalf("DEL: %v", err)
			}
			printed := w.vpcctl(nil, "metrics")
			if printed.err != nil {
				t.Fatalf("vpcctl metrics: %v\n%s", printed.err, printed.stderr)
			}
			got := parseProm(t, "vpcctl metrics", printed.stdout)
			want := map[string]float64{
				`vpc_cni_ipv6_addresses{state="assigned"}`: 1,
				`vpc_cni_ipv6_addresses{state="cooling"}`:  1, // b's, within IP_COOLDOWN_PERIOD
				`vpc_cni_ipv6_prefix_present`:              1,
				`vpc_cni_ipv6_stale_addresses`:             0,
				`awscni_total_ip_addresses`:                tc.total(got),
				`awscni_assigned_ip_addresses`:             1,
			}
			for k, v := range want {
				if g, ok := got[k]; !ok || g != v {
					t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
				}
			}
		})
	}
}
