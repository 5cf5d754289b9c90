package commands

import (
	"encoding/json"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"vpc-cni/internal/printers"
	"vpc-cni/status"
	"vpc-cni/store"
)

func eventsCommand() *cli.Command {
	return &cli.Command{
		Name:  "events",
		Usage: "show recent pool events (EC2 actions, adoptions, repairs, lost addresses) and counters",
		Description: `With --follow, the newest events, then each new one as it is recorded (polled every
second) until interrupted: one table row, or with -o json one JSON object, per event.`,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "limit", Value: 50, Usage: "how many of the newest events"},
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep printing new events until interrupted"},
			outputFlag("table"),
		},
		Before: noArgs,
		Action: func(c *cli.Context) error {
			if _, err := format(c); err != nil {
				return err
			}
			if c.Int("limit") < 1 {
				return usagef("--limit %d: must be 1 or more", c.Int("limit"))
			}
			st, err := openStateReadOnly(c)
			if err != nil {
				return err
			}
			if c.Bool("follow") {
				return followEvents(c, st)
			}
			out, err := status.LoadEvents(st, c.Int("limit"))
			if err != nil {
				return err
			}
			return render(c, out, func(t *printers.Table) { status.EventsTable(t, out) })
		},
	}
}

// followEvents prints status.FollowEvents until SIGINT or SIGTERM.
func followEvents(c *cli.Context, st *store.Store) error {
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	f, _ := format(c)
	return status.FollowEvents(ctx, st, c.Int("limit"), func(e status.EventView) error { return printEvent(c, f, e) })
}

func printEvent(c *cli.Context, format string, e status.EventView) error {
	if format == "json" || format == "yaml" {
		return json.NewEncoder(c.App.Writer).Encode(e)
	}
	return printers.Render(c.App.Writer, format, true, e, func(t *printers.Table) {
		t.Row(e.Time.Format(time.RFC3339), e.Kind, e.WithPods())
	})
}
