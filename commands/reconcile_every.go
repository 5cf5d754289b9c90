package commands

import (
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
)

// reconcileEvery runs pass every interval plus a random delay of up to one
// more interval, until SIGTERM or SIGINT: the loop of a DaemonSet's
// container, where no systemd timer runs it. The delay is the timer's
// RandomizedDelaySec: nodes started together would otherwise pass in step and
// overflow the account's EC2 buckets (docs/targets.md, cluster scale). A failed pass
// is reported and the loop goes on (a ConfigMap or a credential may be fixed
// meanwhile); pods never wait for it, as the plugin grows the pool itself.
// With --metrics-listen it serves the snapshot it takes after each pass
// (and every snapshotEvery between them). With NETWORK_POLICY_ENFORCING_MODE
// set it answers the policy agent's start-up question, as ipamd does.
func reconcileEvery(c *cli.Context, every time.Duration, pass func(*cli.Context) error) error {
	ctx, stop := signal.NotifyContext(c.Context, syscall.SIGTERM, os.Interrupt)
	defer stop()
	m, err := startMetrics(ctx, c)
	if err != nil {
		return err
	}
	if err := startPolicyConfig(ctx, c); err != nil {
		return err
	}
	refresh := time.NewTicker(snapshotEvery)
	defer refresh.Stop()
	for {
		err := pass(c)
		if err != nil {
			stderrLine(c, slog.LevelError, "reconcile: "+err.Error())
		}
		m.passed(err)
		wait := time.NewTimer(every + rand.N(every))
	waiting:
		for {
			select {
			case <-ctx.Done():
				wait.Stop()
				return nil
			case <-refresh.C:
				m.snapshot()
			case <-wait.C:
				break waiting
			}
		}
	}
}
