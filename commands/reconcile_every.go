package commands

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"vpc-cni/metrics"
	"vpc-cni/status"
)

// metricsListenFlag is where the loop serves /metrics and /healthz.
var metricsListenFlag = &cli.StringFlag{
	Name: "metrics-listen", EnvVars: []string{"VPC_CNI_METRICS_LISTEN"},
	Usage: "with --every: serve /metrics (Prometheus text) and /healthz on this address (the DaemonSet's :61678)",
}

// reconcileEvery runs pass every interval plus a random delay of up to one
// more interval, until SIGTERM or SIGINT: the loop of a DaemonSet's
// container, where no systemd timer runs it. The delay is the timer's
// RandomizedDelaySec: nodes started together would otherwise pass in step and
// overflow the account's EC2 buckets (docs/targets.md, cluster scale). A failed pass
// is reported and the loop goes on (a ConfigMap or a credential may be fixed
// meanwhile); pods never wait for it, as the plugin grows the pool itself.
func reconcileEvery(c *cli.Context, every time.Duration, pass func(*cli.Context) error) error {
	ctx, stop := signal.NotifyContext(c.Context, syscall.SIGTERM, os.Interrupt)
	defer stop()
	health, err := serveMetrics(ctx, c)
	if err != nil {
		return err
	}
	for {
		err := pass(c)
		if err != nil {
			fmt.Fprintf(c.App.ErrWriter, "vpcctl: reconcile: %v\n", err)
		}
		health.Record(err)
		wait := time.NewTimer(every + rand.N(every))
		select {
		case <-ctx.Done():
			wait.Stop()
			return nil
		case <-wait.C:
		}
	}
}

// serveMetrics listens on --metrics-listen (if given) before the first
// pass, so a scrape never waits for one. Each scrape opens the state briefly.
func serveMetrics(ctx context.Context, c *cli.Context) (*metrics.Health, error) {
	health := &metrics.Health{}
	addr := c.String(metricsListenFlag.Name)
	if addr == "" {
		return health, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-listen %s: %w", addr, err)
	}
	gather := func() (metrics.Input, error) {
		knobs, err := knobInputs(c)
		if err != nil {
			return metrics.Input{}, err
		}
		st, err := openStateReadOnly(c)
		if err != nil {
			return metrics.Input{}, err
		}
		return status.MetricsInput(st, knobs, time.Now())
	}
	go func() {
		if err := metrics.Serve(ctx, ln, metrics.Handler(gather, health)); err != nil {
			fmt.Fprintf(c.App.ErrWriter, "vpcctl: metrics: %v\n", err)
		}
	}()
	fmt.Fprintf(c.App.ErrWriter, "vpcctl: serving /metrics and /healthz on http://%s\n", ln.Addr())
	return health, nil
}
