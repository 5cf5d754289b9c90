package cloud

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"vpc-cni/internal/testsupport/simtest"
	"vpc-cni/sim/ec2sim"
)

func TestThrottleRetriedBySDK(t *testing.T) {
	sim := startSim(t, ec2sim.Config{})
	c := newClient(t, Options{})
	st := sim.State()
	sim.ResetCounters()
	sim.FailNext("DescribeSubnets", "RequestLimitExceeded", 2)
	if _, err := c.Subnet(testCtx(t), st.SubnetID); err != nil {
		t.Fatalf("two throttles then success: %v", err)
	}
	if n := sim.Counters()["DescribeSubnets"]; n != 3 {
		t.Fatalf("DescribeSubnets calls = %d, want 3", n)
	}

	sim.ResetCounters()
	sim.FailNext("DescribeSubnets", "RequestLimitExceeded", 3)
	_, err := c.Subnet(testCtx(t), st.SubnetID)
	wantKind(t, err, KindThrottled, "ec2:DescribeSubnets", "RequestLimitExceeded", "3 attempt")
	if n := sim.Counters()["DescribeSubnets"]; n != 3 {
		t.Fatalf("DescribeSubnets calls = %d, want 3", n)
	}
}

// TestMaxAttemptsFromEnv: AWS_MAX_ATTEMPTS is honoured.
func TestMaxAttemptsFromEnv(t *testing.T) {
	sim := startSim(t, ec2sim.Config{})
	t.Setenv("AWS_MAX_ATTEMPTS", "5")
	c := newClient(t, Options{})
	sim.FailNext("DescribeSubnets", "RequestLimitExceeded", 4)
	if _, err := c.Subnet(testCtx(t), sim.State().SubnetID); err != nil {
		t.Fatalf("AWS_MAX_ATTEMPTS=5, four throttles: %v", err)
	}
	if n := sim.Counters()["DescribeSubnets"]; n != 5 {
		t.Fatalf("DescribeSubnets calls = %d, want 5", n)
	}
}

func TestSubnetExhaustion(t *testing.T) {
	sim := startSim(t, ec2sim.Config{InstanceType: "m5.large"})
	c := newClient(t, Options{})
	ctx := testCtx(t)
	st := sim.State()
	sim.SetSubnetFree(2)
	_, err := c.AssignAddresses(ctx, st.ENIs[0].ID, 5, false)
	wantKind(t, err, KindSubnetFull, "ec2:AssignPrivateIpAddresses", "subnet")
	_, err = c.CreateENI(ctx, CreateENIRequest{SubnetID: st.SubnetID, InstanceID: st.InstanceID, Count: 5})
	wantKind(t, err, KindSubnetFull, "ec2:CreateNetworkInterface")
	_, err = c.AssignAddresses(ctx, st.ENIs[0].ID, 1, true)
	wantKind(t, err, KindNoFreePrefix, "/28")
	// The code EC2 also uses for it (amazon-vpc-cni-k8s#3105), told apart by message.
	sim.FailNext("CreateNetworkInterface", "InvalidParameterValue: There aren't sufficient free Ipv4 addresses or prefixes", 1)
	_, err = c.CreateENI(ctx, CreateENIRequest{SubnetID: st.SubnetID, InstanceID: st.InstanceID, Count: 1, Prefixes: true})
	wantKind(t, err, KindSubnetFull, "InvalidParameterValue")
	sim.FailNext("CreateNetworkInterface", "InvalidParameterValue: Invalid value 'x' for SubnetId", 1)
	_, err = c.CreateENI(ctx, CreateENIRequest{SubnetID: st.SubnetID, InstanceID: st.InstanceID, Count: 1})
	wantKind(t, err, KindOther, "InvalidParameterValue")
}

func TestLimitExceeded(t *testing.T) {
	sim := startSim(t, ec2sim.Config{InstanceType: "t3.small"}) // 3 ENIs x 4 addresses
	c := newClient(t, Options{})
	ctx := testCtx(t)
	st := sim.State()
	_, err := c.AssignAddresses(ctx, st.ENIs[0].ID, 4, false)
	wantKind(t, err, KindLimit, "re-read")
	for dev := 1; dev <= 3; dev++ {
		eni, err := c.CreateENI(ctx, CreateENIRequest{SubnetID: st.SubnetID, InstanceID: st.InstanceID})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.AttachENI(ctx, eni.ID, st.InstanceID, dev)
		if dev < 3 && err != nil {
			t.Fatal(err)
		}
		if dev == 3 {
			wantKind(t, err, KindLimit, "AttachmentLimitExceeded")
		}
	}
}

func TestUnauthorizedNamesAction(t *testing.T) {
	sim := startSim(t, ec2sim.Config{})
	c := newClient(t, Options{})
	sim.DenyAction("AssignPrivateIpAddresses")
	_, err := c.AssignAddresses(testCtx(t), sim.State().ENIs[0].ID, 1, false)
	wantKind(t, err, KindUnauthorized, "ec2:AssignPrivateIpAddresses", "IAM")
}

func TestUnreachableEC2(t *testing.T) {
	sim := startSim(t, ec2sim.Config{})
	dead := simtest.ClosedURL(t)
	t.Setenv("AWS_ENDPOINT_URL_EC2", dead)
	c := newClient(t, Options{})
	_, err := c.Subnet(testCtx(t), sim.State().SubnetID)
	wantKind(t, err, KindUnreachable, "EC2 endpoint "+dead, "not reachable", "connection refused")
}

func TestUnreachableIMDS(t *testing.T) {
	startSim(t, ec2sim.Config{})
	dead := simtest.ClosedURL(t)
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", dead)
	c := newClient(t, Options{})
	_, err := c.Identity(testCtx(t))
	wantKind(t, err, KindUnreachable, "imds:GET", dead, "AWS_EC2_METADATA_SERVICE_ENDPOINT")
	_, err = c.AttachedInterfaces(testCtx(t))
	wantKind(t, err, KindUnreachable)
}

func TestMissingCredentials(t *testing.T) {
	sim := startSim(t, ec2sim.Config{})
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", simtest.ClosedURL(t))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	c := newClient(t, Options{})
	_, err := c.Subnet(testCtx(t), sim.State().SubnetID)
	wantKind(t, err, KindNoCredentials, "ec2:DescribeSubnets", "AWS_ACCESS_KEY_ID", "IAM role")
	if n := sim.Counters()["DescribeSubnets"]; n != 0 {
		t.Fatalf("an unsigned call reached EC2 %d times", n)
	}
}

// TestInstanceRoleCredentials: with no keys in the environment the chain
// falls through to the instance role served by IMDS.
func TestInstanceRoleCredentials(t *testing.T) {
	sim := startSim(t, ec2sim.Config{})
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	c := newClient(t, Options{})
	if _, err := c.Subnet(testCtx(t), sim.State().SubnetID); err != nil {
		t.Fatal(err)
	}
	if got := sim.LastAccessKey(); got == "" || got == "AKIDEC2SIM" {
		t.Fatalf("signed with %q, want the role's key", got)
	}
}

// TestSlowEC2IsTimeout: an answer slower than HTTPTimeout is a timeout, not a hang.
func TestSlowEC2IsTimeout(t *testing.T) {
	sim := startSim(t, ec2sim.Config{})
	sim.SetFaults(ec2sim.Faults{Latency: 2 * time.Second})
	c := newClient(t, Options{HTTPTimeout: 50 * time.Millisecond, MaxAttempts: 1})
	_, err := c.Subnet(testCtx(t), sim.State().SubnetID)
	wantKind(t, err, KindTimeout, "ec2:DescribeSubnets", "no answer from EC2", "request timed out after 50ms")
	var at *AttemptTimeoutError
	if !errors.As(err, &at) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("%v: want an AttemptTimeoutError that is still a deadline error", err)
	}
}

// A call cut off by the caller's deadline says so, and is not mistaken for
// a per-attempt timeout, however long that is.
func TestDeadlineIsNotAnAttemptTimeout(t *testing.T) {
	sim := startSim(t, ec2sim.Config{})
	sim.SetFaults(ec2sim.Faults{Latency: 2 * time.Second})
	c := newClient(t, Options{HTTPTimeout: time.Minute, MaxAttempts: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := c.Subnet(ctx, sim.State().SubnetID)
	wantKind(t, err, KindTimeout, "ec2:DescribeSubnets", "before the caller's deadline")
	var at *AttemptTimeoutError
	if errors.As(err, &at) || strings.Contains(err.Error(), "request timed out") {
		t.Errorf("%v: a deadline reported as a per-attempt timeout", err)
	}
}

// AttemptTimeout gives each HTTP attempt the time left until the caller's
// deadline, so the deadline alone bounds a call; none without a deadline.
func TestAttemptTimeoutDerivesFromTheDeadline(t *testing.T) {
	if got := AttemptTimeout(context.Background()); got != 0 {
		t.Errorf("no deadline: %v, want 0 (the client's default)", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if got := AttemptTimeout(ctx); got <= 59*time.Minute || got > time.Hour+attemptSlack {
		t.Errorf("deadline in an hour: %v, want the time left (just under an hour) plus the slack, not a fixed 10s", got)
	}
	past, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	if got := AttemptTimeout(past); got != attemptSlack {
		t.Errorf("deadline passed: %v, want the slack alone (an HTTP timeout of 0 would mean none)", got)
	}
}
