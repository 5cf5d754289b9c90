package commands

import (
	"time"

	"github.com/urfave/cli/v2"

	"vpc-cni/sim/whatif"
)

func simWhatifCommand() *cli.Command {
	return &cli.Command{
		Name:  "whatif",
		Usage: "replay pod arrivals on a virtual clock through the real policy and reconcile, for a grid of targets",
		Description: `Each setting runs on a fresh emulated node; nothing sleeps. Prints one row per setting
(mutating EC2 calls by action, idle addresses, pods that found the pool empty, ENIs, throttled calls)
and with --svg writes a chart of calls against idle addresses.

Example (a steady arrival of 232 pods):
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
	w, err := whatif.ModelSpec{Model: c.String("model"), Trace: c.String("trace"), Pods: c.Int("pods"),
		Burst: c.Int("burst"), Every: c.Duration("every"), Day: c.Duration("day")}.Workload()
	if err != nil {
		return err
	}
	targets := whatif.DefaultTargets()
	if t := c.StringSlice("target"); len(t) > 0 {
		if targets, err = whatif.ParseTargets(t); err != nil {
			return err
		}
	}
	intervals, err := whatif.ParseIntervals(c.StringSlice("interval"))
	if err != nil {
		return err
	}
	o := whatif.Options{InstanceType: c.String("instance-type"), ENILatency: c.Duration("eni-latency"),
		IMDSLag: c.Duration("imds-lag"), RefillDelay: time.Second}
	grid := whatif.Grid(targets, intervals)
	if ns := c.IntSlice("cluster"); len(ns) > 0 {
		o.Rest, o.TimerJitter = c.Duration("rest"), c.Duration("timer-jitter")
		if o.ThrottleBackoff, err = whatif.ParseBackoff(c.String("throttle-backoff")); err != nil {
			return err
		}
		return whatif.ClusterStudy(c.App.Writer, ns, grid, whatif.ClusterOptions{Options: o,
			PodsPerNode: c.Int("pods-per-node"), Together: c.Bool("together")})
	}
	return whatif.Study(c.App.Writer, w, grid, o, c.String("svg"))
}
