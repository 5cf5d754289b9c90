package cloud

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// sdkError builds the error shape the EC2 client returns:
// OperationError → ResponseError(status) → GenericAPIError(code, msg).
func sdkError(op string, status int, code, msg string) error {
	return &smithy.OperationError{ServiceID: "EC2", OperationName: op, Err: &awshttp.ResponseError{
		ResponseError: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}},
			Err:      &smithy.GenericAPIError{Code: code, Message: msg},
		},
	}}
}

func TestClassifyEC2Codes(t *testing.T) {
	cases := []struct {
		code, msg string
		status    int
		want      Kind
	}{
		{"InsufficientFreeAddressesInSubnet", "The specified subnet does not have enough free addresses", 400, KindSubnetFull},
		{"InsufficientCidrBlocks", "no free cidr blocks", 400, KindNoFreePrefix},
		{"InvalidNetworkInterface.InUse", "Interface: [eni-1] in use.", 400, KindInUse},
		{"InvalidParameterValue", "There aren't sufficient free Ipv4 addresses or prefixes", 400, KindSubnetFull},
		{"InvalidParameterValue", "Device index 1 is in use", 400, KindOther},
		{"PrivateIpAddressLimitExceeded", "Number of private addresses will exceed limit.", 400, KindLimit},
		{"AttachmentLimitExceeded", "Interface count 4 exceeds the limit for t3.small", 400, KindLimit},
		{"RequestLimitExceeded", "Request limit exceeded.", 503, KindThrottled},
		{"Throttling", "Rate exceeded", 400, KindThrottled},
		{"SomethingNew", "slow down", 429, KindThrottled},
		{"InvalidNetworkInterfaceID.NotFound", "The networkInterface ID 'eni-1' does not exist", 400, KindNotFound},
		{"InvalidAttachmentID.NotFound", "no such attachment", 400, KindNotFound},
		{"UnauthorizedOperation", "You are not authorized to perform this operation.", 403, KindUnauthorized},
		{"AuthFailure", "AWS was not able to validate the provided access credentials", 401, KindNoCredentials},
		{"InternalError", "internal", 500, KindOther},
	}
	for _, tc := range cases {
		err := sdkError("AssignPrivateIpAddresses", tc.status, tc.code, tc.msg)
		if got := Classify(err); got != tc.want {
			t.Errorf("%s %q (HTTP %d): Classify = %v, want %v", tc.code, tc.msg, tc.status, got, tc.want)
		}
		wrapped := ec2Error("AssignPrivateIpAddresses", "http://ec2", err)
		if got := Classify(wrapped); got != tc.want {
			t.Errorf("%s wrapped: Classify = %v, want %v", tc.code, got, tc.want)
		}
		if msg := wrapped.Error(); strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "ec2:AssignPrivateIpAddresses: ") {
			t.Errorf("%s: message not one line naming the action: %q", tc.code, msg)
		}
	}
}

func TestClassifyTransportAndCredentials(t *testing.T) {
	refused := &url.Error{Op: "Post", URL: "http://127.0.0.1:1/", Err: &net.OpError{Op: "dial", Net: "tcp",
		Err: errors.New("connect: connection refused")}}
	cases := []struct {
		name string
		err  error
		want Kind
	}{
		{"connection refused", &smithy.OperationError{ServiceID: "EC2", OperationName: "DescribeSubnets",
			Err: &retry.MaxAttemptsError{Attempt: 3, Err: refused}}, KindUnreachable},
		{"deadline", fmt.Errorf("op: %w", context.DeadlineExceeded), KindTimeout},
		{"no credentials", &smithy.OperationError{ServiceID: "EC2", OperationName: "DescribeSubnets",
			Err: fmt.Errorf("get identity: failed to refresh cached credentials, no EC2 IMDS role found, %w", refused)},
			KindNoCredentials},
		{"imds disabled", errors.New(`access disabled to EC2 IMDS via client option, or "AWS_EC2_METADATA_DISABLED" environment variable`),
			KindUnreachable},
		{"plain", errors.New("boom"), KindOther},
	}
	for _, tc := range cases {
		if got := Classify(tc.err); got != tc.want {
			t.Errorf("%s: Classify = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestMessagesSayWhatToDo(t *testing.T) {
	cases := []struct {
		err  error
		want []string
	}{
		{ec2Error("AssignPrivateIpAddresses", "", sdkError("AssignPrivateIpAddresses", 403, "UnauthorizedOperation",
			"You are not authorized to perform this operation.")), []string{"ec2:AssignPrivateIpAddresses", "IAM"}},
		{ec2Error("DescribeSubnets", "", &smithy.OperationError{ServiceID: "EC2", OperationName: "DescribeSubnets",
			Err: errors.New("get identity: failed to refresh cached credentials, no EC2 IMDS role found")}),
			[]string{"AWS_ACCESS_KEY_ID", "IAM role"}},
		{ec2Error("DescribeSubnets", "http://127.0.0.1:1", &url.Error{Op: "Post", URL: "http://127.0.0.1:1/",
			Err: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}}),
			[]string{"EC2 endpoint http://127.0.0.1:1 not reachable", "connection refused", "AWS_ENDPOINT_URL_EC2"}},
		{imdsError("instance-id", "http://169.254.169.254", &url.Error{Op: "Get", URL: "http://127.0.0.1:2/latest/meta-data/instance-id",
			Err: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}}),
			[]string{"imds:GET instance-id", "http://127.0.0.1:2 not reachable", "AWS_EC2_METADATA_SERVICE_ENDPOINT"}},
		{ec2Error("CreateNetworkInterface", "", &smithy.OperationError{ServiceID: "EC2", OperationName: "CreateNetworkInterface",
			Err: &retry.MaxAttemptsError{Attempt: 3, Err: sdkError("CreateNetworkInterface", 503, "RequestLimitExceeded", "Request limit exceeded.")}}),
			[]string{"throttled", "3 attempt", "RequestLimitExceeded"}},
		{ec2Error("CreateNetworkInterface", "", sdkError("CreateNetworkInterface", 400, "InsufficientFreeAddressesInSubnet",
			"not enough\nfree addresses")), []string{"subnet", "InsufficientFreeAddressesInSubnet", "not enough free addresses"}},
	}
	for _, tc := range cases {
		msg := tc.err.Error()
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("message %q lacks %q", msg, w)
			}
		}
		if strings.Contains(msg, "\n") {
			t.Errorf("message spans lines: %q", msg)
		}
	}
}

// TestKindsThatStopAPass: a pass stops on what would fail again at once, and
// goes on after a failure of one ENI (a limit, a missing or busy resource).
func TestKindsThatStopAPass(t *testing.T) {
	stop := map[Kind]bool{KindThrottled: true, KindSubnetFull: true, KindNoFreePrefix: true, KindUnauthorized: true,
		KindNoCredentials: true, KindUnreachable: true, KindTimeout: true}
	for k := KindOther; k <= KindInUse; k++ {
		if k.StopsPass() != stop[k] {
			t.Errorf("%v.StopsPass() = %v, want %v", k, k.StopsPass(), stop[k])
		}
	}
}

func TestKindString(t *testing.T) {
	if KindSubnetFull.String() != "subnet-full" || Kind(99).String() != "kind(99)" {
		t.Fatalf("Kind names: %v %v", KindSubnetFull, Kind(99))
	}
}
