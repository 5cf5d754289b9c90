package commands

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"vpc-cni/metrics"
	"vpc-cni/plugin"
	"vpc-cni/reconcile"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// metricsFileFlag names the textfile-collector file reconcile refreshes.
var metricsFileFlag = &cli.StringFlag{
	Name: "metrics-file", EnvVars: []string{"VPC_CNI_METRICS_FILE"},
	Usage: "after the pass, write Prometheus metrics to this file (node-exporter textfile collector)",
}

func metricsCommand() *cli.Command {
	return &cli.Command{
		Name:  "metrics",
		Usage: "print the pool as Prometheus metrics (or write them for node-exporter's textfile collector)",
		Description: `Examples:
   vpcctl metrics
   vpcctl metrics --file /var/lib/node_exporter/textfile/vpc_cni.prom`,
		Flags:  []cli.Flag{stateDirFlag(), &cli.StringFlag{Name: "file", Usage: "replace this file atomically instead of printing"}},
		Before: noArgs,
		Action: func(c *cli.Context) error {
			knobs, err := knobInputs(c)
			if err != nil {
				return err
			}
			st, err := openStateReadOnly(c)
			if err != nil {
				return err
			}
			in, err := metricsInput(st, knobs, time.Now())
			if err != nil {
				return err
			}
			if path := c.String("file"); path != "" {
				return metrics.WriteFile(path, in)
			}
			return metrics.Render(c.App.Writer, in)
		},
	}
}

// metricsInput gathers the pool status and the store's counters.
func metricsInput(st *store.Store, knobs settings.Inputs, now time.Time) (metrics.Input, error) {
	status, err := loadStatus(st, knobs, now)
	if err != nil {
		return metrics.Input{}, err
	}
	in := metrics.Input{Figures: status.Figures, Assignments: status.Assignments, Intents: status.Intents,
		GrowBlocked: status.GrowBlocked != "", Counters: map[string]int64{}}
	for _, e := range status.ENIs {
		in.ENIs = append(in.ENIs, metrics.ENI{ID: e.ID, DeviceIndex: e.DeviceIndex, Free: e.Free,
			Cooling: e.Cooling, Assigned: e.Assigned, Releasing: e.Releasing})
	}
	if r := status.LastReconcile; r != nil {
		in.LastReconcile, in.LastDuration, in.LastCalls, in.LastFailed = r.Time, time.Duration(r.Duration), r.Calls, r.Error != ""
	}
	err = st.View(func(tx *store.Tx) (err error) { in.Counters, err = tx.Counters(); return err })
	if err != nil && !errors.Is(err, store.ErrNotInitialized) {
		return in, err
	}
	in.Reference = referenceFigures(status, in.Counters)
	return in, nil
}

// referenceFigures are the figures of the reference's awscni_* series.
func referenceFigures(s PoolStatus, counters map[string]int64) metrics.Reference {
	r := metrics.Reference{NoAddress: counters[plugin.CounterNoFreeAddress], EC2Calls: map[string]int64{}}
	if s.Node != nil && s.Node.Limits.IPv4PerENI > 1 {
		r.IPMax = s.Figures.MaxENIs * (s.Node.Limits.IPv4PerENI - 1)
		if s.Figures.Mode == "prefix" {
			r.IPMax *= 16
		}
	}
	prefixes := map[string]bool{}
	for _, e := range s.ENIs {
		for _, a := range e.Addresses {
			if p, err := netip.ParsePrefix(a.Block); err == nil && p.Bits() < 32 {
				prefixes[a.Block] = true
			}
		}
	}
	r.Prefixes = len(prefixes)
	for name, n := range counters {
		if action, ok := strings.CutPrefix(name, reconcile.CounterEC2Calls); ok {
			r.EC2Calls[action] = n
		} else if rest, ok := strings.CutPrefix(name, reconcile.CounterEC2Errors); ok {
			api, code, _ := strings.Cut(rest, "_") // EC2 action names have no underscore
			r.EC2Errors = append(r.EC2Errors, metrics.APIError{API: api, Code: code, N: n})
		}
	}
	return r
}

// writeMetricsAfterPass refreshes the metrics file; a failure is reported, not fatal.
func writeMetricsAfterPass(c *cli.Context, st *store.Store) {
	path := c.String("metrics-file")
	if path == "" {
		return
	}
	knobs, err := knobInputs(c)
	var in metrics.Input
	if err == nil {
		in, err = metricsInput(st, knobs, time.Now())
	}
	if err == nil {
		err = metrics.WriteFile(path, in)
	}
	if err != nil {
		fmt.Fprintf(c.App.ErrWriter, "vpcctl: metrics: %v\n", err)
	}
}
