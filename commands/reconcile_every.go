package commands

import (
	"fmt"
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
// overflow the account's EC2 buckets (README, cluster scale). A failed pass
// is reported and the loop goes on (a ConfigMap or a credential may be fixed
// meanwhile); pods never wait for it, as the plugin grows the pool itself.
func reconcileEvery(c *cli.Context, every time.Duration, pass func(*cli.Context) error) error {
	ctx, stop := signal.NotifyContext(c.Context, syscall.SIGTERM, os.Interrupt)
	defer stop()
	for {
		if err := pass(c); err != nil {
			fmt.Fprintf(c.App.ErrWriter, "vpcctl: reconcile: %v\n", err)
		}
		wait := time.NewTimer(every + rand.N(every))
		select {
		case <-ctx.Done():
			wait.Stop()
			return nil
		case <-wait.C:
		}
	}
}
