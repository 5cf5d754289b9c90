package reconcile

import (
	"context"
	"errors"
	"strings"

	"vpc-cni/cloud"
	"vpc-cni/store"
)

// saveReport records the pass's outcome, a failed one included: the report
// (status, doctor and metrics read it) and, for a failure, an event with
// the error and the reconcile_failed counter. A pass refused because EC2's
// answer contradicted the node writes nothing to state.db (store.RefusedPassFile).
func (r *Runner) saveReport(rep *Report, err error) {
	sr := r.reportOf(rep, err)
	if IsIdentityError(err) {
		if perr := r.Store.PutRefusedPass(sr); perr != nil {
			r.log().Warn("recording the refused pass", "err", perr)
		}
		return
	}
	uerr := r.Store.Update(func(tx *store.Tx) error {
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
		if err == nil {
			return nil
		}
		return tx.AddEvent(store.Event{Time: r.now(), Kind: "reconcile-failed", Message: sr.Cause + ": " + sr.Error})
	})
	if uerr != nil {
		r.log().Warn("saving the reconcile report", "err", uerr)
	}
	if err == nil {
		if cerr := r.Store.ClearRefusedPass(); cerr != nil {
			r.log().Warn("clearing the refused pass", "err", cerr)
		}
	}
}

func (r *Runner) reportOf(rep *Report, err error) store.ReconcileReport {
	calls := map[string]int{}
	for _, c := range rep.Calls {
		calls[c]++
	}
	sr := store.ReconcileReport{Time: rep.Time, Duration: rep.Duration, Actions: len(rep.Plan.Actions), Calls: calls,
		LastLeakSweep: rep.lastLeakSweep, Observed: rep.Observed}
	if err != nil {
		sr.Error, sr.Cause = err.Error(), Cause(err)
	}
	return sr
}

// Cause names what a failed pass's error means, for doctor and status: a
// cloud.Kind ("no-credentials", "unreachable", "throttled", "unauthorized",
// ...), "identity" (EC2's answer contradicts the node), "config", "timeout"
// or "other".
func Cause(err error) string {
	var ce *cloud.Error
	switch {
	case IsIdentityError(err):
		return "identity"
	case IsConfigError(err):
		return "config"
	case errors.As(err, &ce):
		return ce.Kind.String()
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return cloud.KindTimeout.String()
	}
	return cloud.KindOther.String()
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
