package pass

import (
	"context"
	"errors"
	"fmt"
	"time"

	"vpc-cni/cloud"
	"vpc-cni/internal/usage"
	"vpc-cni/reconcile"
)

// deadline is the cause a pass's context carries when its --timeout runs
// out, so that the error names that deadline and not a per-attempt HTTP
// timeout (cloud.AttemptTimeoutError), which reads the same to the SDK.
type deadline struct{ timeout time.Duration }

func (d deadline) Error() string {
	return fmt.Sprintf("the pass's --timeout of %s ran out", d.timeout)
}

// Context bounds a pass (lock wait, EC2 and IMDS calls, retries) by its
// --timeout.
func Context(parent context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(parent, timeout, deadline{timeout})
}

// Classify marks a configuration error as the caller's mistake (exit 2).
// A failure on the pass's own deadline (ctx from Context) says so and
// suggests a longer --timeout; a per-attempt timeout keeps its own words.
func Classify(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if reconcile.IsConfigError(err) {
		return usage.Wrap(err)
	}
	var d deadline
	var attempt *cloud.AttemptTimeoutError
	if ctx.Err() != nil && errors.As(context.Cause(ctx), &d) && !errors.As(err, &attempt) {
		return fmt.Errorf("%s: %w (raise --timeout?)", d, err)
	}
	return err
}
