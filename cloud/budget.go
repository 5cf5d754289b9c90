package cloud

import (
	"context"
	"fmt"
	"strings"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
)

// RateBudget is a token bucket shared by every process on the node (the
// store persists it; the SDK's own retry quota lives in one process only).
//
// TakeToken takes one token from bucket if it has one and returns 0. If it
// has none it takes nothing and returns how long until one will be there; the
// caller waits that long and asks again. rate is tokens per second, burst the
// bucket's size (and its content when first seen).
type RateBudget interface {
	TakeToken(bucket string, now time.Time, rate, burst float64) (wait time.Duration, err error)
}

// Bucket names in the store.
const (
	BucketDescribe = "ec2-describe"
	BucketMutating = "ec2-mutating"
)

// BucketRate is a token bucket's refill rate (tokens per second) and size.
type BucketRate struct{ Rate, Burst float64 }

// Default per-node budgets (Options.DescribeBudget, Options.MutatingBudget). EC2 gives an account 20/s (burst 100) for
// Describe* and 5/s (burst 50..100) for each mutating action, shared by every
// node of the account; one node takes a tenth of the describe rate. The
// mutating bucket is shared by all mutating actions (each has its own 5/s at
// EC2), so 2/s is well under any one of them; its burst of 20 covers a first
// reconcile on a big node (4 ENIs: create, attach, modify-attribute each,
// 12 calls) with room for retries, instead of making an inline grow wait for
// tokens.
var (
	DefaultDescribeBudget = BucketRate{Rate: 2, Burst: 20}
	DefaultMutatingBudget = BucketRate{Rate: 2, Burst: 20}
)

// budgetMiddleware takes a token before every EC2 attempt (after the retry
// middleware, so retries pay too, as they do at EC2).
type budgetMiddleware struct {
	budget             RateBudget
	describe, mutating BucketRate
	now                func() time.Time
}

func (*budgetMiddleware) ID() string { return "vpc-cni/RateBudget" }

func (m *budgetMiddleware) HandleFinalize(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (
	middleware.FinalizeOutput, middleware.Metadata, error,
) {
	action := awsmiddleware.GetOperationName(ctx)
	if err := m.take(ctx, action); err != nil {
		return middleware.FinalizeOutput{}, middleware.Metadata{}, err
	}
	return next.HandleFinalize(ctx, in)
}

// take waits for a token of the action's bucket, up to the context deadline.
func (m *budgetMiddleware) take(ctx context.Context, action string) error {
	bucket, rate := BucketMutating, m.mutating
	if strings.HasPrefix(action, "Describe") {
		bucket, rate = BucketDescribe, m.describe
	}
	for {
		now := m.now()
		wait, err := m.budget.TakeToken(bucket, now, rate.Rate, rate.Burst)
		if err != nil {
			return &Error{Op: "ec2:" + action, Kind: KindOther, Msg: fmt.Sprintf("rate budget %s: %v", bucket, err), Err: err}
		}
		if wait <= 0 {
			return nil
		}
		if dl, ok := ctx.Deadline(); ok && now.Add(wait).After(dl) {
			return &Error{Op: "ec2:" + action, Kind: KindThrottled, Code: "ClientRateBudget",
				Msg: fmt.Sprintf("node's EC2 rate budget %q has no token before the deadline (next in %v); "+
					"back off and retry later", bucket, wait.Round(time.Millisecond))}
		}
		if err := sleep(ctx, wait); err != nil {
			return err
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// addBudget puts the budget middleware into an EC2 operation's stack.
func addBudget(m *budgetMiddleware) func(*middleware.Stack) error {
	return func(s *middleware.Stack) error {
		return s.Finalize.Insert(m, "Retry", middleware.After)
	}
}
