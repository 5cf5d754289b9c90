package ec2sim

import (
	"context"
	"errors"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/smithy-go"
)

// fakeClock is a settable clock for IMDS lag and token expiry.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *fakeClock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// startSim serves a fresh emulator on an httptest server.
func startSim(t testing.TB, cfg Config) (*Sim, string) {
	t.Helper()
	sim, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	return sim, srv.URL
}

// ec2Client is the real SDK client on the emulator with static credentials.
// With retries false it makes exactly one attempt per call.
func ec2Client(t testing.TB, url string, retries bool) *ec2.Client {
	t.Helper()
	cfg, err := config.LoadDefaultConfig(context.Background(),
		config.WithRegion("us-west-2"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("AKIDTEST", "SECRET", "")),
		config.WithSharedConfigFiles([]string{}), config.WithSharedCredentialsFiles([]string{}))
	if err != nil {
		t.Fatal(err)
	}
	return ec2.NewFromConfig(cfg, func(o *ec2.Options) {
		o.BaseEndpoint = aws.String(url)
		o.Retryer = FastRetries()
		if !retries {
			o.Retryer = NoAPIRetries()
		}
	})
}

func imdsClient(url string) *imds.Client {
	return imds.New(imds.Options{Endpoint: url, DisableDefaultMaxBackoff: true,
		Retryer: retry.NewStandard(func(so *retry.StandardOptions) {
			so.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
			so.RateLimiter = ratelimit.None
		})})
}

// apiErr returns the EC2 error code and HTTP status of err.
func apiErr(t *testing.T, err error) (string, int) {
	t.Helper()
	if err == nil {
		t.Fatal("want an error, got nil")
	}
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("not an API error: %v", err)
	}
	status := 0
	var withStatus interface{ HTTPStatusCode() int }
	if errors.As(err, &withStatus) {
		status = withStatus.HTTPStatusCode()
	}
	return ae.ErrorCode(), status
}

func wantCode(t *testing.T, err error, code string, status int) {
	t.Helper()
	gotCode, gotStatus := apiErr(t, err)
	if gotCode != code || gotStatus != status {
		t.Fatalf("want %s (HTTP %d), got %s (HTTP %d): %v", code, status, gotCode, gotStatus, err)
	}
}

func must[T any](t testing.TB) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

var ctx = context.Background()

func errorsAs(err error, target any) bool { return errors.As(err, target) }
