package commands

import (
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"vpc-cni/loop"
	"vpc-cni/npa"
	"vpc-cni/settings"
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

// policyConfigSocketFlag is where the loop answers the policy agent's
// start-up question, as ipamd does.
var policyConfigSocketFlag = &cli.StringFlag{
	Name: "policy-config-socket", Value: npa.ConfigSocket, EnvVars: []string{"VPC_CNI_POLICY_CONFIG_SOCKET"},
	Usage: "with --every and NETWORK_POLICY_ENFORCING_MODE set: answer the network policy agent's GetNetworkPolicyConfigs on this unix socket (root only), as aws-node's ipamd does",
}

// reconcileEvery is `reconcile --every`: loop.Run until SIGTERM or SIGINT.
func reconcileEvery(c *cli.Context, every time.Duration, once func(*cli.Context) error) error {
	metricsAt, err := loop.Addr("--"+metricsListenFlag.Name, c.String(metricsListenFlag.Name))
	if err != nil {
		return err
	}
	healthAt, err := loop.Addr("--"+healthListenFlag.Name, c.String(healthListenFlag.Name))
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(c.Context, syscall.SIGTERM, os.Interrupt)
	defer stop()
	return loop.Run(ctx, loop.Config{Every: every, Pass: func() error { return once(c) },
		MetricsAt: metricsAt, HealthAt: healthAt, PolicySocket: c.String(policyConfigSocketFlag.Name),
		StateDir: stateDir(c), Env: envLookup,
		Inputs:    func() (settings.Inputs, error) { return knobInputs(c) },
		OpenState: func() (*store.Store, error) { return openStateReadOnly(c) },
		Log:       func(level slog.Level, msg string) { stderrLine(c, level, msg) }})
}
