package commands

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
)

// reconcileEvery runs pass every interval until SIGTERM or SIGINT: the loop
// of a DaemonSet's container, where no systemd timer runs it. A failed pass
// is reported and the loop goes on (a ConfigMap or a credential may be fixed
// meanwhile); pods never wait for it, as the plugin grows the pool itself.
func reconcileEvery(c *cli.Context, every time.Duration, pass func(*cli.Context) error) error {
	ctx, stop := signal.NotifyContext(c.Context, syscall.SIGTERM, os.Interrupt)
	defer stop()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if err := pass(c); err != nil {
			fmt.Fprintf(c.App.ErrWriter, "vpcctl: reconcile: %v\n", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
