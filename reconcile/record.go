package reconcile

import (
	"errors"
	"strings"
	"time"

	"vpc-cni/cloud"
	"vpc-cni/store"
)

// saveReport records the pass's outcome, a failed one included: the report
// (status, doctor and metrics read it) and, for a failure, an event with
// the error and the reconcile_failed counter. A pass refused because EC2's
// answer contradicted the node writes nothing to state.db (store.RefusedPassFile).
func (p *pass) saveReport(err error) {
	sr := p.reportOf(err)
	if IsIdentityError(err) {
		if perr := p.Store.PutRefusedPass(sr); perr != nil {
			p.log().Warn("recording the refused pass", "err", perr)
		}
		return
	}
	uerr := p.Store.Update(func(tx *store.Tx) error {
		if last, ok, err := tx.ReconcileReport(); err != nil {
			return err
		} else if ok && last.LastLeakSweep.After(sr.LastLeakSweep) {
			sr.LastLeakSweep = last.LastLeakSweep // a pass that failed early never read it
		}
		if err := tx.PutReconcileReport(sr); err != nil {
			return err
		}
		outcome := "ok"
		if err != nil {
			outcome = "failed"
		}
		if err := tx.AddCounter("reconcile_"+outcome, 1); err != nil {
			return err
		}
		if err := countEC2(tx, sr.Calls, err); err != nil {
			return err
		}
		if err := p.recordLateFindings(tx); err != nil {
			return err
		}
		if err == nil {
			return nil
		}
		return tx.AddEvent(store.Event{Time: p.now(), Kind: "reconcile-failed", Message: sr.Cause + ": " + sr.Error})
	})
	if uerr != nil {
		p.log().Warn("saving the reconcile report", "err", uerr)
	}
	if err == nil {
		if cerr := p.Store.ClearRefusedPass(); cerr != nil {
			p.log().Warn("clearing the refused pass", "err", cerr)
		}
	}
}

// RecordStopped records a pass that never started (a bad configuration, the
// lock held past the wait) as a failed pass is recorded: the report status
// and doctor read, the reconcile_failed counter the metrics show, and an
// event. A state file no pass has made yet is left alone.
func RecordStopped(st *store.Store, err error, now time.Time) error {
	sr := store.ReconcileReport{Time: now, Error: err.Error(), Cause: Cause(err)}
	uerr := st.Update(func(tx *store.Tx) error {
		if last, ok, err := tx.ReconcileReport(); err != nil {
			return err
		} else if ok {
			sr.LastLeakSweep = last.LastLeakSweep
		}
		if err := tx.PutReconcileReport(sr); err != nil {
			return err
		}
		if err := tx.AddCounter("reconcile_failed", 1); err != nil {
			return err
		}
		return tx.AddEvent(store.Event{Time: now, Kind: "reconcile-failed", Message: sr.Cause + ": " + sr.Error})
	})
	if errors.Is(uerr, store.ErrNotInitialized) {
		return nil
	}
	return uerr
}

func (p *pass) reportOf(err error) store.ReconcileReport {
	calls := map[string]int{}
	for _, c := range p.rep.Calls {
		calls[c]++
	}
	sr := store.ReconcileReport{Time: p.rep.Time, Duration: p.rep.Duration, Actions: len(p.rep.Plan.Actions), Calls: calls,
		LastLeakSweep: p.lastLeakSweep, Observed: p.rep.Observed}
	if err != nil {
		sr.Error, sr.Cause = err.Error(), Cause(err)
	}
	return sr
}

// Counter name prefixes of every EC2 call a pass made (its action follows)
// and of the EC2 error that ended a pass (action, "_", EC2 code or kind):
// the metrics' awscni_ec2api_req_count and awscni_aws_api_error_count.
const (
	CounterEC2Calls  = "ec2_calls_"
	CounterEC2Errors = "ec2_errors_"
)

func countEC2(tx *store.Tx, calls map[string]int, passErr error) error {
	for action, n := range calls {
		if err := tx.AddCounter(CounterEC2Calls+action, int64(n)); err != nil {
			return err
		}
	}
	var ce *cloud.Error
	if !errors.As(passErr, &ce) || !strings.HasPrefix(ce.Op, "ec2:") {
		return nil
	}
	code := ce.Code
	if code == "" {
		code = ce.Kind.String()
	}
	return tx.AddCounter(CounterEC2Errors+strings.TrimPrefix(ce.Op, "ec2:")+"_"+code, 1)
}

// lateFindings are the kinds a pass finds after its merge (which records
// its own findings with the plan): what it did to EC2 then, kept as events
// and counters like the merge's. (The IPv6 step writes its /80 events with
// the pool's record.)
var lateFindings = map[string]bool{"leaked-eni": true, "leaked-eni-kept": true}

func (p *pass) recordLateFindings(tx *store.Tx) error {
	for _, f := range p.rep.Findings {
		if !lateFindings[f.Kind] {
			continue
		}
		if err := tx.AddEvent(store.Event{Time: p.now(), Kind: f.Kind, Message: f.Message}); err != nil {
			return err
		}
		if err := tx.AddCounter("findings_"+f.Kind, 1); err != nil {
			return err
		}
	}
	return nil
}
