package whatif

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"vpc-cni/internal/usage"
	"vpc-cni/settings"
)

// ModelSpec names a built-in workload (`vpcctl sim whatif --model`) or a
// trace file (--trace), with the sizes the models take.
type ModelSpec struct {
	Model, Trace string
	Pods, Burst  int
	Every, Day   time.Duration
}

// Workload builds the workload the spec names; a bad spec is a usage error.
func (m ModelSpec) Workload() (Workload, error) {
	if m.Trace != "" {
		f, err := os.Open(m.Trace)
		if err != nil {
			return Workload{}, usage.Errorf("--trace: %v", err)
		}
		defer f.Close()
		w, err := ReadTrace(f, m.Trace)
		return w, usage.Wrap(err)
	}
	if m.Pods < 1 || m.Every <= 0 {
		return Workload{}, usage.Errorf("--pods must be at least 1 and --every positive")
	}
	switch m.Model {
	case "steady":
		return Steady(m.Pods, m.Every), nil
	case "bursts":
		return Bursts(m.Pods, m.Burst, m.Every), nil
	case "rollout":
		return Rollout(m.Pods, 10*time.Minute, m.Every), nil
	case "daily":
		return Daily(m.Pods, m.Day, time.Hour), nil
	}
	return Workload{}, usage.Errorf("--model %q: want steady, bursts, rollout or daily", m.Model)
}

// ParseTargets reads --target values: KEY=VALUE pairs separated by spaces
// (the flag splits its value at commas, so commas separate pairs too).
func ParseTargets(ts []string) ([]map[string]string, error) {
	var out []map[string]string
	for _, t := range ts {
		m := map[string]string{}
		for _, kv := range strings.FieldsFunc(t, func(r rune) bool { return r == ',' || r == ' ' }) {
			k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
			if !ok || k == "" {
				return nil, usage.Errorf("--target %q: want KEY=VALUE pairs separated by spaces", t)
			}
			if err := settings.KnownKey(k); err != nil {
				return nil, usage.Errorf("--target %q: %v", t, err)
			}
			m[k] = v
		}
		out = append(out, m)
	}
	return out, nil
}

// ParseIntervals reads --interval values: positive durations.
func ParseIntervals(ss []string) ([]time.Duration, error) {
	var out []time.Duration
	for _, s := range ss {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return nil, usage.Errorf("--interval %q: want a positive duration such as 30s", s)
		}
		out = append(out, d)
	}
	return out, nil
}

// ParseBackoff reads --throttle-backoff: "off" or "BASE/MAX".
func ParseBackoff(s string) (Backoff, error) {
	if s == "off" {
		return Backoff{}, nil
	}
	base, maxText, ok := strings.Cut(s, "/")
	b, err1 := time.ParseDuration(base)
	m, err2 := time.ParseDuration(maxText)
	if !ok || err1 != nil || err2 != nil || b <= 0 || m < b {
		return Backoff{}, usage.Errorf(`--throttle-backoff %q: want "off" or BASE/MAX durations such as 5s/2m, MAX at least BASE`, s)
	}
	return Backoff{Base: b, Max: m}, nil
}

// Study runs w for every setting of grid on a fresh node each, then writes
// the table to out and, with svg, the chart there.
func Study(out io.Writer, w Workload, grid []Setting, o Options, svg string) error {
	var rs []Result
	for _, s := range grid {
		r, err := Run(w, s, o)
		if err != nil {
			return err
		}
		rs = append(rs, r)
	}
	fmt.Fprintf(out, "%s on %s, new ENIs usable after %s\n", w.Name, o.InstanceType, o.ENILatency)
	if err := WriteTable(out, rs); err != nil {
		return err
	}
	writeIPv6Notes(out, rs)
	if svg == "" {
		return nil
	}
	f, err := os.Create(svg)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := WriteSVG(f, w.Name+" on "+o.InstanceType, rs); err != nil {
		return err
	}
	fmt.Fprintf(out, "chart: %s\n", svg)
	return nil
}

// writeIPv6Notes says, for each setting whose pods take IPv6, what its
// IPv6 pool cost: the /80's calls, not in the table's IPv4 columns.
func writeIPv6Notes(out io.Writer, rs []Result) {
	for _, r := range rs {
		if r.Setting.Env["ENABLE_IPv6"] != "true" && len(r.IPv6Calls) == 0 {
			continue
		}
		n, parts := 0, []string{}
		for _, k := range slices.Sorted(maps.Keys(r.IPv6Calls)) {
			n += r.IPv6Calls[k]
			parts = append(parts, fmt.Sprintf("%d %s", r.IPv6Calls[k], k))
		}
		calls := fmt.Sprintf("%d EC2 calls", n)
		if n == 1 {
			calls = "1 EC2 call"
		}
		fmt.Fprintf(out, "%s: the IPv6 pool took %s in the whole run, the node's start included (%s); "+
			"one /80 holds 2^48 addresses, so the warm targets do not apply to it\n",
			r.Setting.Label(), calls, cmp.Or(strings.Join(parts, ", "), "none"))
	}
}

// ClusterStudy runs cluster mode for each node count and setting and
// writes its table.
func ClusterStudy(out io.Writer, nodes []int, grid []Setting, o ClusterOptions) error {
	var rs []ClusterResult
	for _, n := range nodes {
		if n < 1 {
			return usage.Errorf("--cluster %d: want a positive number of nodes", n)
		}
		for _, s := range grid {
			if s.Env["ENABLE_IPv6"] == "true" {
				return usage.Errorf("--cluster: %q: the cluster model has the IPv4 pool only; run ENABLE_IPv6 settings without --cluster (one node, the real pass)", s.Label())
			}
			co := o
			co.Nodes = n
			r, err := Cluster(s, co)
			if err != nil {
				return err
			}
			rs = append(rs, r)
		}
	}
	fmt.Fprintf(out, "scale-up from empty %s nodes to %d pods each, then %s at rest, one account\n",
		o.InstanceType, o.PodsPerNode, o.Rest)
	return WriteClusterTable(out, rs)
}
