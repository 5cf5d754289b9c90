package commands

import (
	"errors"
	"time"

	"github.com/urfave/cli/v2"

	"vpc-cni/store"
)

func eventsCommand() *cli.Command {
	return &cli.Command{
		Name:  "events",
		Usage: "show recent pool events (EC2 actions, adoptions, repairs, lost addresses) and counters",
		Flags: []cli.Flag{
			stateDirFlag(),
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
			out := struct {
				Events   []store.Event    `json:"events"`
				Counters map[string]int64 `json:"counters"`
			}{[]store.Event{}, map[string]int64{}}
			err = st.View(func(tx *store.Tx) error {
				var err error
				if out.Events, err = tx.Events(c.Int("limit")); err != nil {
					return err
				}
				out.Counters, err = tx.Counters()
				return err
			})
			if err != nil && !errors.Is(err, store.ErrNotInitialized) {
				return err
			}
			return render(c, out, func(t *table) {
				t.row("TIME", "KIND", "MESSAGE")
				for _, e := range out.Events {
					t.row(e.Time.Format(time.RFC3339), e.Kind, e.Message)
				}
			})
		},
	}
}
