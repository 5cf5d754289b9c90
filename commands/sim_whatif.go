package commands

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"vpc-cni/internal/whatif"
)

func simWhatifCommand() *cli.Command {
	return &cli.Command{
		Name:  "whatif",
		Usage: "replay pod arrivals on a virtual clock through the real policy and reconcile, for a grid of targets",
		Description: `Each setting runs on a fresh emulated node; nothing sleeps. Prints one row per setting
(mutating EC2 calls by action, idle addresses, pods that found the pool empty, ENIs, throttled calls)
and with --svg writes a chart of calls against idle addresses.

Example (the seed's case):
   vpcctl sim whatif --model steady --pods 232 --every 10s --instance-type m4.4xlarge --svg whatif.svg`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "model", Value: "steady", Usage: "steady, bursts, rollout or daily (ignored with --trace)"},
			&cli.StringFlag{Name: "trace", Usage: `a trace file: "<seconds> add|del <pod>" lines`},
			&cli.IntFlag{Name: "pods", Value: 232, Usage: "pods (steady, bursts), replicas (rollout), peak per hour (daily)"},
			&cli.DurationFlag{Name: "every", Value: 10 * time.Second, Usage: "gap between arrivals, bursts or rollout waves"},
			&cli.IntFlag{Name: "burst", Value: 10, Usage: "pods per burst"},
			&cli.DurationFlag{Name: "day", Value: 24 * time.Hour, Usage: "length of the daily cycle"},
			&cli.StringFlag{Name: "instance-type", Value: "m4.4xlarge"},
			&cli.DurationFlag{Name: "eni-latency", Value: 5 * time.Second, Usage: "a new ENI's addresses are usable this long after its pass"},
			&cli.DurationFlag{Name: "imds-lag", Usage: "IMDS shows a change to the node's ENIs this long after EC2 made it"},
			&cli.StringSliceFlag{Name: "target", Usage: `a setting, e.g. "WARM_IP_TARGET=1 ADAPTIVE_GROWTH_WINDOW=60s" (repeat; default: a built-in grid)`},
			&cli.StringSliceFlag{Name: "interval", Value: cli.NewStringSlice("30s"), Usage: "timer intervals (repeat)"},
			&cli.StringFlag{Name: "svg", Usage: "write the chart to this file"},
			&cli.IntSliceFlag{Name: "cluster", Usage: "cluster mode: node counts (repeat); each node's policy model scales up to --pods-per-node at once, then rests --rest, against one account"},
			&cli.IntFlag{Name: "pods-per-node", Value: 30, Usage: "cluster mode: pods per node"},
			&cli.DurationFlag{Name: "rest", Value: 2 * time.Hour, Usage: "cluster mode: time at rest after the scale-up (calls at rest are counted over its second half)"},
			&cli.BoolFlag{Name: "together", Usage: "cluster mode: the nodes booted together (timers in step) instead of spread over the interval"},
			&cli.DurationFlag{Name: "timer-jitter", Usage: "cluster mode: delay each timer pass by up to this much (systemd RandomizedDelaySec)"},
			&cli.StringFlag{Name: "throttle-backoff", Value: "off",
				Usage: `cluster mode: growth's back-off after RequestLimitExceeded, "BASE/MAX" (doubling) or "off"`},
		},
		Before: noArgs,
		Action: simWhatif,
	}
}

func simWhatif(c *cli.Context) error {
	w, err := whatifWorkload(c)
	if err != nil {
		return err
	}
	targets := whatif.DefaultTargets()
	if t := c.StringSlice("target"); len(t) > 0 {
		if targets, err = parseTargets(t); err != nil {
			return err
		}
	}
	var intervals []time.Duration
	for _, s := range c.StringSlice("interval") {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return usagef("--interval %q: want a positive duration such as 30s", s)
		}
		intervals = append(intervals, d)
	}
	o := whatif.Options{InstanceType: c.String("instance-type"), ENILatency: c.Duration("eni-latency"),
		IMDSLag: c.Duration("imds-lag"), RefillDelay: time.Second}
	if ns := c.IntSlice("cluster"); len(ns) > 0 {
		return simCluster(c, ns, whatif.Grid(targets, intervals), o)
	}
	var rs []whatif.Result
	for _, s := range whatif.Grid(targets, intervals) {
		r, err := whatif.Run(w, s, o)
		if err != nil {
			return err
		}
		rs = append(rs, r)
	}
	fmt.Fprintf(c.App.Writer, "%s on %s, new ENIs usable after %s\n", w.Name, o.InstanceType, o.ENILatency)
	if err := whatif.WriteTable(c.App.Writer, rs); err != nil {
		return err
	}
	if path := c.String("svg"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := whatif.WriteSVG(f, w.Name+" on "+o.InstanceType, rs); err != nil {
			return err
		}
		fmt.Fprintf(c.App.Writer, "chart: %s\n", path)
	}
	return nil
}

func whatifWorkload(c *cli.Context) (whatif.Workload, error) {
	if path := c.String("trace"); path != "" {
		f, err := os.Open(path)
		if err != nil {
			return whatif.Workload{}, usagef("--trace: %v", err)
		}
		defer f.Close()
		w, err := whatif.ReadTrace(f, path)
		if err != nil {
			return w, usagef("%v", err)
		}
		return w, nil
	}
	n, every := c.Int("pods"), c.Duration("every")
	if n < 1 || every <= 0 {
		return whatif.Workload{}, usagef("--pods must be at least 1 and --every positive")
	}
	switch c.String("model") {
	case "steady":
		return whatif.Steady(n, every), nil
	case "bursts":
		return whatif.Bursts(n, c.Int("burst"), every), nil
	case "rollout":
		return whatif.Rollout(n, 10*time.Minute, every), nil
	case "daily":
		return whatif.Daily(n, c.Duration("day"), time.Hour), nil
	}
	return whatif.Workload{}, usagef("--model %q: want steady, bursts, rollout or daily", c.String("model"))
}

func parseTargets(ts []string) ([]map[string]string, error) {
	var out []map[string]string
	for _, t := range ts {
		m := map[string]string{}
		// The flag splits its value at commas, so pairs are separated by spaces.
		for _, kv := range strings.FieldsFunc(t, func(r rune) bool { return r == ',' || r == ' ' }) {
			k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
			if !ok || k == "" {
				return nil, usagef("--target %q: want KEY=VALUE pairs separated by spaces", t)
			}
			m[k] = v
		}
		out = append(out, m)
	}
	return out, nil
}

// simCluster runs cluster mode and prints its table.
func simCluster(c *cli.Context, nodes []int, grid []whatif.Setting, o whatif.Options) error {
	o.Rest, o.TimerJitter = c.Duration("rest"), c.Duration("timer-jitter")
	b, err := parseBackoff(c.String("throttle-backoff"))
	if err != nil {
		return err
	}
	o.ThrottleBackoff = b
	var rs []whatif.ClusterResult
	for _, n := range nodes {
		if n < 1 {
			return usagef("--cluster %d: want a positive number of nodes", n)
		}
		for _, s := range grid {
			r, err := whatif.Cluster(s, whatif.ClusterOptions{Options: o, Nodes: n, PodsPerNode: c.Int("pods-per-node"),
				Together: c.Bool("together")})
			if err != nil {
				return err
			}
			rs = append(rs, r)
		}
	}
	fmt.Fprintf(c.App.Writer, "scale-up from empty %s nodes to %d pods each, then %s at rest, one account\n",
		o.InstanceType, c.Int("pods-per-node"), o.Rest)
	return whatif.WriteClusterTable(c.App.Writer, rs)
}

// parseBackoff reads --throttle-backoff: "off" or "BASE/MAX".
func parseBackoff(s string) (whatif.Backoff, error) {
	if s == "off" {
		return whatif.Backoff{}, nil
	}
	base, maxText, ok := strings.Cut(s, "/")
	b, err1 := time.ParseDuration(base)
	m, err2 := time.ParseDuration(maxText)
	if !ok || err1 != nil || err2 != nil || b <= 0 || m < b {
		return whatif.Backoff{}, usagef(`--throttle-backoff %q: want "off" or BASE/MAX durations such as 5s/2m, MAX at least BASE`, s)
	}
	return whatif.Backoff{Base: b, Max: m}, nil
}
