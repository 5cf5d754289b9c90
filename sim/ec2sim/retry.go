package ec2sim

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
)

// NoAPIRetries is a retryer for tests that assert one EC2 error: API errors
// (throttles and 5xx included) are returned after one attempt, but connection
// errors are still retried at once. On loopback, aws.NopRetryer flakes: the
// SDK closes the request body when the response headers arrive, racing
// net/http's final read of it, which closes the connection under the response
// ("use of closed network connection", aws-sdk-go-v2#2737); the standard
// retryer retries that, so a test client must too.
func NoAPIRetries() aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = 3
		o.Retryables = []retry.IsErrorRetryable{retry.RetryableConnectionError{}}
		o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
		o.RateLimiter = ratelimit.None
	})
}

// FastRetries is the standard retry policy (which errors are retried, 3
// attempts) without the waits or the retry quota, for tests of retry paths.
func FastRetries() aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = 3
		o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
		o.RateLimiter = ratelimit.None
	})
}
