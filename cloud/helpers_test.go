package cloud

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"vpc-cni/cloud/ec2sim"
)

// hostAWSEnv is every variable that could leak the host's AWS setup into a test.
var hostAWSEnv = []string{"AWS_PROFILE", "AWS_DEFAULT_REGION", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL",
	"AWS_MAX_ATTEMPTS", "AWS_RETRY_MODE", "AWS_EC2_METADATA_DISABLED", "AWS_ACCESS_KEY", "AWS_SECRET_KEY",
	"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
	"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "AWS_CA_BUNDLE"}

// startSim runs an emulated node on loopback and points the AWS environment at it.
func startSim(t *testing.T, cfg ec2sim.Config) *ec2sim.Sim {
	t.Helper()
	sim, err := ec2sim.New(cfg)
	if err != nil {
		t.Fatalf("ec2sim.New: %v", err)
	}
	if err := sim.Start("127.0.0.1:0"); err != nil {
		t.Fatalf("sim.Start: %v", err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	for _, k := range hostAWSEnv {
		t.Setenv(k, "")
	}
	for _, kv := range sim.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	return sim
}

// newClient builds a Client with millisecond retry backoffs.
func newClient(t *testing.T, opts Options) *Client {
	t.Helper()
	if opts.MaxBackoff == 0 {
		opts.MaxBackoff = time.Millisecond
	}
	c, err := New(context.Background(), opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// closedURL is an http URL on which nothing listens.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := "http://" + l.Addr().String()
	_ = l.Close()
	return u
}

// wantKind fails unless err is of kind k and its message holds every part.
func wantKind(t *testing.T, err error, k Kind, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want a %v error, got nil", k)
	}
	if got := Classify(err); got != k {
		t.Fatalf("Classify = %v, want %v; err: %v", got, k, err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("message %q lacks %q", err.Error(), p)
		}
	}
}

func simENI(t *testing.T, sim *ec2sim.Sim, id string) ec2sim.ENI {
	t.Helper()
	for _, e := range sim.State().ENIs {
		if e.ID == id {
			return e
		}
	}
	t.Fatalf("sim has no ENI %s", id)
	return ec2sim.ENI{}
}
