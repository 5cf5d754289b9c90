package cloud

import (
	"context"
	"strings"
	"testing"
	"time"
	"vpc-cni/internal/testsupport/simtest"

	"vpc-cni/sim/ec2sim"
)

// startSim runs an emulated node on loopback and points the AWS environment at it.
func startSim(t *testing.T, cfg ec2sim.Config) *ec2sim.Sim { return simtest.Start(t, cfg) }

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
