package commands

import (
	"time"

	"github.com/urfave/cli/v2"

	"vpc-cni/metrics"
	"vpc-cni/status"
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
		Flags:  []cli.Flag{&cli.StringFlag{Name: "file", Usage: "replace this file atomically instead of printing"}},
		Before: noArgs,
		Action: func(c *cli.Context) error {
			s, err := openSession(c, readOnly)
			if err != nil {
				return err
			}
			in, err := status.MetricsInput(s.st, s.in, time.Now())
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
