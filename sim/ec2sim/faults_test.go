package ec2sim

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/smithy-go"
)

func TestThrottlingIsRetriedBySDK(t *testing.T) {
	sim, url := startSim(t, Config{})
	sim.FailNext("DescribeSubnets", "RequestLimitExceeded", 2)
	c := ec2Client(t, url, true)
	if _, err := c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{}); err != nil {
		t.Fatalf("the third attempt should succeed: %v", err)
	}
	if n := sim.Counters()["DescribeSubnets"]; n != 3 {
		t.Fatalf("want 2 throttled attempts and 1 success counted, got %d", n)
	}

	sim.FailNext("DescribeSubnets", "RequestLimitExceeded", 1)
	_, err := ec2Client(t, url, false).DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
	wantCode(t, err, "RequestLimitExceeded", 503)
}

func TestServerErrors(t *testing.T) {
	sim, url := startSim(t, Config{})
	c := ec2Client(t, url, false)
	sim.FailNext("DescribeInstances", "InternalError", 1)
	_, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{})
	wantCode(t, err, "InternalError", 500)
	if _, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{}); err != nil {
		t.Fatalf("FailNext 1 must fail once: %v", err)
	}

	sim.SetFaults(Faults{ServerErrorRate: 1})
	_, err = c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
	wantCode(t, err, "InternalError", 500)
	sim.SetFaults(Faults{ThrottleRate: 1})
	_, err = c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
	wantCode(t, err, "RequestLimitExceeded", 503)
	sim.SetFaults(Faults{})

	sim.FailNext("*", "Unavailable", 1)
	_, err = c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
	wantCode(t, err, "Unavailable", 503)
}

func TestFaultRatesAreSeeded(t *testing.T) {
	outcomes := func() string {
		sim, url := startSim(t, Config{})
		sim.SetFaults(Faults{ThrottleRate: 0.5, Seed: 7})
		c := ec2Client(t, url, false)
		var b strings.Builder
		for range 20 {
			_, err := c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
			if err != nil {
				b.WriteByte('x')
			} else {
				b.WriteByte('.')
			}
		}
		return b.String()
	}
	a, b := outcomes(), outcomes()
	if a != b || !strings.Contains(a, "x") || !strings.Contains(a, ".") {
		t.Fatalf("same seed, different or one-sided outcomes: %s vs %s", a, b)
	}
}

func TestUnauthorizedOperation(t *testing.T) {
	sim, url := startSim(t, Config{})
	c := ec2Client(t, url, false)
	sim.DenyAction("CreateNetworkInterface")
	_, err := c.CreateNetworkInterface(ctx, &ec2.CreateNetworkInterfaceInput{SubnetId: aws.String(sim.State().SubnetID)})
	wantCode(t, err, "UnauthorizedOperation", 403)
	var ae smithy.APIError
	_ = errorsAs(err, &ae)
	if msg := ae.ErrorMessage(); !strings.Contains(msg, "ec2:CreateNetworkInterface") ||
		!strings.Contains(msg, "Encoded authorization failure message: ") {
		t.Fatalf("message does not name the action: %s", msg)
	}
	if n := len(sim.State().ENIs); n != 1 {
		t.Fatalf("a denied create made an ENI: %d ENIs", n)
	}
	sim.AllowAction("CreateNetworkInterface")
	createENI(t, c, sim, &ec2.CreateNetworkInterfaceInput{})
}

// TestErrorWireFormat checks the raw bytes EC2 clients other than the Go SDK
// would parse, and the unknown-action and counter behaviour.
func TestErrorWireFormat(t *testing.T) {
	sim, base := startSim(t, Config{})
	resp, err := http.PostForm(base+"/", url.Values{"Action": {"FlyToTheMoon"}, "Version": {"2016-11-15"}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(body), "<Response><Errors><Error><Code>InvalidAction</Code><Message>") ||
		!strings.Contains(string(body), "</Errors><RequestID>") {
		t.Fatalf("HTTP %d: %s", resp.StatusCode, body)
	}
	if resp.Header.Get("x-amzn-RequestId") == "" {
		t.Fatal("no x-amzn-RequestId header")
	}
	c := ec2Client(t, base, false)
	_, _ = c.DeleteNetworkInterface(ctx, &ec2.DeleteNetworkInterfaceInput{NetworkInterfaceId: aws.String("eni-00000000000000000")})
	got := sim.Counters()
	if got["FlyToTheMoon"] != 1 || got["DeleteNetworkInterface"] != 1 {
		t.Fatalf("counters: %v", got)
	}
	sim.ResetCounters()
	if len(sim.Counters()) != 0 {
		t.Fatal("counters not reset")
	}
}

func TestDryRun(t *testing.T) {
	sim, url := startSim(t, Config{})
	c := ec2Client(t, url, false)
	_, err := c.CreateNetworkInterface(ctx, &ec2.CreateNetworkInterfaceInput{SubnetId: aws.String(sim.State().SubnetID), DryRun: aws.Bool(true)})
	wantCode(t, err, "DryRunOperation", 412)
	if n := len(sim.State().ENIs); n != 1 {
		t.Fatalf("dry run made an ENI")
	}
}
