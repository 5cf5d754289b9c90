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
			&cli.StringSliceFlag{Name: "target", Usage: `a setting, e.g. "WARM_IP_TARGET=1,ADAPTIVE_GROWTH_WINDOW=60s" (repeat; default: a built-in grid)`},
			&cli.StringSliceFlag{Name: "interval", Value: cli.NewStringSlice("30s"), Usage: "timer intervals (repeat)"},
			&cli.StringFlag{Name: "svg", Usage: "write the chart to this file"},
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
	o := whatif.Options{InstanceType: c.String("instance-type"), ENILatency: c.Duration("eni-latency"), RefillDelay: time.Second}
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
		for _, kv := range strings.Split(t, ",") {
			k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
			if !ok || k == "" {
				return nil, usagef("--target %q: want KEY=VALUE pairs separated by commas", t)
			}
			m[k] = v
		}
		out = append(out, m)
	}
	return out, nil
}
