package commands

import (
	"errors"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"vpc-cni/podgc"
	"vpc-cni/reconcile"
	"vpc-cni/settings"
	"vpc-cni/store"
)

// Finding is one doctor check's outcome.
type Finding struct {
	Check  string `json:"check"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// staleAfter: with a 30 s timer, a last pass older than this means the timer
// (or EC2 access) is broken.
const staleAfter = 5 * time.Minute

func doctorCommand() *cli.Command {
	return &cli.Command{
		Name:  "doctor",
		Usage: "check the node state, the last reconcile and the host wiring; exit 1 if something is wrong",
		Description: `Read-only. Each line says what was checked and, when it fails, what to do.

Examples:
   vpcctl doctor
   vpcctl doctor -o json`,
		Flags:  []cli.Flag{stateDirFlag(), outputFlag("table")},
		Before: noArgs,
		Action: func(c *cli.Context) error {
			if _, err := format(c); err != nil {
				return err
			}
			in, err := knobInputs(c)
			if err != nil {
				return err
			}
			st, err := openStateReadOnly(c)
			if err != nil {
				return err
			}
			found := diagnose(st, in, time.Now())
			if err := render(c, found, func(t *table) { doctorRows(t, found) }); err != nil {
				return err
			}
			for _, f := range found {
				if !f.OK {
					return fmt.Errorf("doctor: %s: %s", f.Check, f.Detail)
				}
			}
			return nil
		},
	}
}

// diagnose runs every check; none of them writes.
func diagnose(st *store.Store, in settings.Inputs, now time.Time) []Finding {
	status, err := loadStatus(st, in, now)
	if errors.Is(err, store.ErrDamaged) {
		return []Finding{checkStore(st)} // the whole walk, not only where status read
	}
	if err != nil {
		return []Finding{{"state file", false, err.Error()}}
	}
	if !status.Initialized && status.LastReconcile != nil {
		return []Finding{{"node", false, "not learnt yet: every pass so far failed"}, checkLastReconcile(status, now)}
	}
	if !status.Initialized {
		return []Finding{{"node", false, "no reconcile has run in " + st.Dir() + "; run 'vpcctl reconcile' and enable the timer"}}
	}
	return []Finding{checkStore(st), checkLastReconcile(status, now), checkIntents(st, now), checkENIsReady(status),
		checkGrowth(status), checkGarbage(st, in), checkNodeRules(status)}
}

// checkStore walks every page of the file (a damaged page is found even
// where no status read reaches), then the store's own invariants.
func checkStore(st *store.Store) Finding {
	if err := st.CheckFile(); err != nil {
		return Finding{"state file", false, err.Error()}
	}
	if err := st.View(func(tx *store.Tx) error { return tx.Check() }); err != nil {
		return Finding{"state file", false, err.Error() + "; keep a copy of state.db and report it, then run `vpcctl state rebuild`"}
	}
	return Finding{"state file", true, st.Path() + " is consistent; every page is readable"}
}

func checkLastReconcile(s PoolStatus, now time.Time) Finding {
	r := s.LastReconcile
	switch {
	case r == nil:
		return Finding{"last reconcile", false, "none recorded; run 'vpcctl reconcile'"}
	case r.Error != "":
		return Finding{"last reconcile", false, fmt.Sprintf("failed %s ago: %s. Likely cause (%s): %s",
			now.Sub(r.Time).Round(time.Second), r.Error, r.Cause, likelyCause(r.Cause))}
	case now.Sub(r.Time) > staleAfter:
		return Finding{"last reconcile", false, fmt.Sprintf("the last pass (it succeeded) was %s ago; every pass, failed ones too, "+
			"is recorded, so no pass has run since: is vpc-cni-reconcile.timer running? (systemctl status vpc-cni-reconcile.timer)",
			now.Sub(r.Time).Round(time.Second))}
	}
	return Finding{"last reconcile", true, fmt.Sprintf("%s ago, took %s", now.Sub(r.Time).Round(time.Second), time.Duration(r.Duration).Round(time.Millisecond))}
}

// likelyCause says what a failed pass's cause (reconcile.Cause) usually
// means on a node, and what to do: reconcile's table of causes.
func likelyCause(cause string) string {
	c, _ := reconcile.CauseOf(cause)
	return c.Meaning + ": " + c.Action
}

func checkIntents(st *store.Store, now time.Time) Finding {
	var intents []store.Intent
	err := st.View(func(tx *store.Tx) (err error) { intents, err = tx.Intents(); return err })
	if err != nil {
		return Finding{"EC2 intents", false, err.Error()}
	}
	for _, in := range intents {
		if now.Sub(in.Started) > staleAfter {
			return Finding{"EC2 intents", false, fmt.Sprintf("%s intent %s from %s is unsettled; the next reconcile repairs it",
				in.Kind, in.ID, in.Started.Format(time.RFC3339))}
		}
	}
	return Finding{"EC2 intents", true, fmt.Sprintf("%d in flight", len(intents))}
}

func checkENIsReady(s PoolStatus) Finding {
	for _, e := range s.ENIs {
		if !e.Ready {
			return Finding{"ENIs", false, fmt.Sprintf("%s (device %d, MAC %s) has no host link set up yet; its addresses are not handed out",
				e.ID, e.DeviceIndex, e.MAC)}
		}
	}
	return Finding{"ENIs", true, fmt.Sprintf("%d ready", len(s.ENIs))}
}

func checkGrowth(s PoolStatus) Finding {
	switch {
	case s.NoProvisioning != "": // the operator's choice, not a fault
		return Finding{"growth", true, fmt.Sprintf("off (%s): %d free", s.NoProvisioning, s.Figures.Free)}
	case s.GrowBlocked != "":
		return Finding{"growth", false, "blocked " + s.GrowBlocked}
	case s.Figures.Free == 0 && s.Figures.Shortfall > 0:
		return Finding{"growth", false, fmt.Sprintf("no free address and a shortfall of %d; pods wait for an inline grow", s.Figures.Shortfall)}
	}
	return Finding{"growth", true, fmt.Sprintf("%d free, shortfall %d", s.Figures.Free, s.Figures.Shortfall)}
}

// checkGarbage is `vpcctl gc --dry-run`.
func checkGarbage(st *store.Store, in settings.Inputs) Finding {
	prefix, err := vethPrefix(in)
	if err != nil {
		return Finding{"host wiring", false, err.Error()}
	}
	rep, err := podgc.Run(st, podgc.Kernel{VethPrefix: prefix}, true, time.Now())
	if errors.Is(err, store.ErrNotInitialized) {
		err = nil
	}
	switch {
	case err != nil:
		return Finding{"host wiring", false, err.Error()}
	case len(rep.Released)+len(rep.Leftovers) > 0:
		return Finding{"host wiring", false, fmt.Sprintf("%d stale assignments and %d leftovers; 'vpcctl gc' removes them",
			len(rep.Released), len(rep.Leftovers))}
	}
	return Finding{"host wiring", true, "every pod's wiring has an owner"}
}

func doctorRows(t *table, found []Finding) {
	t.row("CHECK", "OK", "DETAIL")
	for _, f := range found {
		t.row(f.Check, yesNo(f.OK), f.Detail)
	}
}
