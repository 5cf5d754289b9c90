package commands

import (
	"errors"
	"strings"
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
				Events   []EventView      `json:"events"`
				Counters map[string]int64 `json:"counters"`
			}{[]EventView{}, map[string]int64{}}
			err = st.View(func(tx *store.Tx) error {
				events, err := tx.Events(c.Int("limit"))
				if err != nil {
					return err
				}
				as, err := tx.Assignments()
				if err != nil {
					return err
				}
				out.Events = nameEventPods(events, as)
				out.Counters, err = tx.Counters()
				return err
			})
			if err != nil && !errors.Is(err, store.ErrNotInitialized) {
				return err
			}
			return render(c, out, func(t *table) {
				t.row("TIME", "KIND", "MESSAGE")
				for _, e := range out.Events {
					t.row(e.Time.Format(time.RFC3339), e.Kind, e.withPods())
				}
			})
		},
	}
}

// EventView is an event with the pods it names: an event names an assignment
// by "<containerID>/<ifName>", which an operator cannot map to a pod.
type EventView struct {
	store.Event
	Pods []PodRef `json:"pods,omitempty"`
}

// PodRef is a pod an event's assignment key belongs to.
type PodRef struct {
	Pod         string `json:"pod"` // "<namespace>/<name>"
	ContainerID string `json:"containerId"`
	IfName      string `json:"ifName"`
}

// nameEventPods finds the assignment keys each event names among the
// assignments the node still holds.
func nameEventPods(events []store.Event, as []store.Assignment) []EventView {
	out := make([]EventView, len(events))
	for i, e := range events {
		out[i].Event = e
		for _, a := range as {
			if a.PodName != "" && strings.Contains(e.Message, a.Key) {
				out[i].Pods = append(out[i].Pods, PodRef{podName(a.PodNamespace, a.PodName), a.ContainerID, a.IfName})
			}
		}
	}
	return out
}

// withPods is the message with "(pod ns/name)" after each key it names.
func (e EventView) withPods() string {
	msg := e.Message
	for _, p := range e.Pods {
		key := store.AssignmentKey(p.ContainerID, p.IfName)
		msg = strings.Replace(msg, key, key+" (pod "+p.Pod+")", 1)
	}
	return msg
}
