package commands

import (
	"github.com/urfave/cli/v2"

	"vpc-cni/internal/printers"
	"vpc-cni/status"
)

func eventsCommand() *cli.Command {
	return &cli.Command{
		Name:  "events",
		Usage: "show recent pool events (EC2 actions, adoptions, repairs, lost addresses) and counters",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "limit", Value: 50, Usage: "how many of the newest events"},
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
			out, err := status.LoadEvents(st, c.Int("limit"))
			if err != nil {
				return err
			}
			return render(c, out, func(t *printers.Table) { status.EventsTable(t, out) })
		},
	}
}
