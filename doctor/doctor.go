// Package doctor checks a node: the state file, the last reconcile, EC2
// intents, the ENIs' host side, growth, the host wiring and the node rules.
// Every check reads; none writes. Each finding says what was checked and,
// when it fails, what was found and, where a command or a pass repairs it,
// which.
package doctor

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"vpc-cni/internal/printers"
	"vpc-cni/podgc"
	"vpc-cni/pool"
	"vpc-cni/rebuild"
	"vpc-cni/reconcile"
	"vpc-cni/settings"
	"vpc-cni/status"
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

// Report is every check's finding, in the order they ran.
type Report []Finding

// Failed is the first failed finding, or nil when every check passed.
func (r Report) Failed() *Finding {
	for i := range r {
		if !r[i].OK {
			return &r[i]
		}
	}
	return nil
}

// Run runs every check with the knobs as the caller resolves them (in).
func Run(st *store.Store, in settings.Inputs, now time.Time) Report {
	s, err := status.Load(st, in, now)
	if errors.Is(err, store.ErrDamaged) {
		return []Finding{checkStore(st)} // the whole walk, not only where status read
	}
	if err != nil {
		return []Finding{{"state file", false, err.Error()}}
	}
	if !s.Initialized && s.LastReconcile != nil {
		return append([]Finding{{"node", false, "not learnt yet: every pass so far failed"}, checkLastReconcile(s, now)}, keptStates(st, "")...)
	}
	if !s.Initialized {
		if f, lost := checkLost(st, in); lost {
			return append([]Finding{f}, keptStates(st, "")...)
		}
		return append([]Finding{{"node", false, "no reconcile has run in " + st.Dir() + "; run 'vpcctl reconcile' and enable the timer"}}, keptStates(st, "")...)
	}
	r := Report{checkStore(st)}
	if f, ok := lastRebuild(st); ok {
		r = append(r, f)
	}
	r = append(r, keptStates(st, s.Node.InstanceID)...)
	return append(r, checkLastReconcile(s, now), checkIntents(st, now), checkENIsReady(s), checkNotOurs(s),
		checkFull(s), checkGrowth(s), checkGarbage(st, in), checkNodeRules(s), checkProfiles(s), checkProfileTrust(s))
}

// WithoutState is doctor on a state dir with no state file: a report and
// true when the kernel shows running pods' wiring (a lost file), else
// false (a new node or a mistyped dir, which the caller words).
func WithoutState() (Report, bool) {
	hs, err := podgc.Kernel{}.ListHost()
	if err != nil {
		return Report{{"state file", false, "no state file, and reading the pods' wiring failed: " + err.Error()}}, true
	}
	if lost := rebuild.IsLost(true, hs); lost.Pods > 0 {
		return Report{{"state file", false, lost.Message() + " (the next reconcile or ADD rebuilds it)"}}, true
	}
	return nil, false
}

// checkLost tells a lost state file (running pods' wiring, no pool) from
// a new node: the kernel is read only because the store holds no pool.
func checkLost(st *store.Store, in settings.Inputs) (Finding, bool) {
	prefix, err := settings.VethPrefixOf(in)
	if err != nil {
		return Finding{"state file", false, err.Error()}, true
	}
	lost, err := rebuild.Detect(st, podgc.Kernel{VethPrefix: prefix}.ListHost)
	switch {
	case err != nil:
		return Finding{"state file", false, err.Error()}, true
	case lost.Pods > 0:
		return Finding{"state file", false, lost.Message() + " (the next reconcile or ADD rebuilds it)"}, true
	}
	return Finding{}, false
}

// lastRebuild names the last rebuild of the state file, from its event:
// what happened to the node is worth saying even once it is healthy again.
func lastRebuild(st *store.Store) (Finding, bool) {
	var last *store.Event
	err := st.View(func(tx *store.Tx) error {
		events, err := tx.Events(0)
		for i := range events {
			if events[i].Kind == rebuild.EventRebuilt {
				last = &events[i]
			}
		}
		return err
	})
	if err != nil || last == nil {
		return Finding{}, false
	}
	return Finding{"state rebuild", true, fmt.Sprintf("%s, at %s", last.Message, last.Time.UTC().Format(time.RFC3339))}, true
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

func checkLastReconcile(s status.PoolStatus, now time.Time) Finding {
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
	return Finding{"last reconcile", true, fmt.Sprintf("%s ago, took %s", now.Sub(r.Time).Round(time.Second), r.Duration.Std().Round(time.Millisecond))}
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

func checkENIsReady(s status.PoolStatus) Finding {
	for _, e := range s.ENIs {
		if !e.Ready && e.Class != string(pool.NotOurs) { // a not-ours ENI is never set up
			return Finding{"ENIs", false, fmt.Sprintf("%s (device %d, MAC %s) has no host link set up yet; its addresses are not handed out. "+
				"The next pass sets it up once a link with that MAC appears (`ip -br link` lists the links; a hot-plugged ENI takes "+
				"seconds); under `vpcctl sim serve`, only its --link-netns gives the emulator's ENIs links",
				e.ID, e.DeviceIndex, e.MAC)}
		}
	}
	return Finding{"ENIs", true, fmt.Sprintf("%d ready", len(s.ENIs))}
}

// checkNotOurs names the attached ENIs vpc-cni leaves alone, why, and what
// they cost the pool: information, not a failure.
func checkNotOurs(s status.PoolStatus) Finding {
	if len(s.NotOurs) == 0 {
		return Finding{"ENIs left alone", true, "none: every attached ENI on card 0 is vpc-cni's or adopted"}
	}
	var each []string
	for _, n := range s.NotOurs {
		cost := fmt.Sprintf("costs %d ENI slot, %d max pods", n.ENISlots, n.MaxPods)
		if n.Card != 0 {
			cost = fmt.Sprintf("on card %d: costs card 0 nothing", n.Card)
		}
		each = append(each, fmt.Sprintf("%s (%s; %s)", n.ID, n.Reason, cost))
	}
	return Finding{"ENIs left alone", true, fmt.Sprintf("%d, never given addresses, routed, tagged, detached or deleted: %s",
		len(s.NotOurs), strings.Join(each, ", "))}
}

// checkFull says whether a pod arriving now would get an address. A full
// node is load, not a fault: the node stays ready and its ADDs fail with
// code 11 until an address frees.
func checkFull(s status.PoolStatus) Finding {
	if s.Full == nil || !s.Full.Full {
		return Finding{"pool full", true, "no: an address is free or can be had"}
	}
	return Finding{"pool full", true, fmt.Sprintf("yes (%s): %s; the node stays ready, its ADDs fail with code 11 until then",
		s.Full.Limit, s.Full.Message())}
}

func checkGrowth(s status.PoolStatus) Finding {
	atLimits := s.Full != nil && s.Full.Full && (s.Full.Limit == pool.LimitMaxPods || s.Full.Limit == pool.LimitENIs)
	switch {
	case s.NoProvisioning != "": // the operator's choice, not a fault
		return Finding{"growth", true, fmt.Sprintf("off (%s): %d free", s.NoProvisioning, s.Figures.Free)}
	case s.GrowBlocked != "":
		return Finding{"growth", false, "blocked " + s.GrowBlocked}
	case atLimits:
		// Full, not stuck: pods hold what the node may have, and freed
		// addresses come back as they cool.
		return Finding{"growth", true, fmt.Sprintf("at the node's limits (%d of %d ENIs, %d max pods): nothing more to grow",
			s.Figures.ENIs, s.Figures.MaxENIs, s.Figures.MaxPods)}
	case s.Figures.Free == 0 && s.Figures.Shortfall > 0:
		return Finding{"growth", false, fmt.Sprintf("no free address and a shortfall of %d; pods wait for an inline grow", s.Figures.Shortfall)}
	}
	return Finding{"growth", true, fmt.Sprintf("%d free, shortfall %d", s.Figures.Free, s.Figures.Shortfall)}
}

// checkGarbage is `vpcctl gc --dry-run`.
func checkGarbage(st *store.Store, in settings.Inputs) Finding {
	prefix, err := settings.VethPrefixOf(in) // the plugin names pods' veths with it
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
	case len(rep.Unowned) > 0:
		return Finding{"host wiring", false, fmt.Sprintf("%s wiring (veths into live namespaces) has no assignment, kept by gc; "+
			"'vpcctl state rebuild --force' restores it", printers.Plural(len(rep.Unowned), "running pod's", "running pods'"))}
	case len(rep.Released)+len(rep.Leftovers) > 0:
		return Finding{"host wiring", false, fmt.Sprintf("%s and %s; 'vpcctl gc' removes them",
			printers.Plural(len(rep.Released), "stale assignment", "stale assignments"), printers.Plural(len(rep.Leftovers), "leftover", "leftovers"))}
	}
	return Finding{"host wiring", true, "every pod's wiring has an owner"}
}

// Rows is the table form of the report.
func (r Report) Rows(t *printers.Table) {
	t.Header("CHECK", "RESULT", "DETAIL")
	for _, f := range r {
		t.Row(f.Check, result(f.OK), f.Detail)
	}
}

// result is a finding's verdict: "ok", or "FAIL" for what needs the operator.
// Not yes/no: a check named "pool full" that passed is not a full pool.
func result(ok bool) string {
	if ok {
		return "ok"
	}
	return "FAIL"
}

func checkNodeRules(s status.PoolStatus) Finding {
	r := s.NodeRules
	if r == nil {
		return Finding{"node rules", false, "node not learnt"}
	}
	return Finding{"node rules", !r.Fault(), r.State + ": " + r.Detail}
}
