package cloud

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"
)

// Kind is what a failed cloud call means to the policy and to reconcile.
type Kind int

const (
	KindOther         Kind = iota // anything else: report it and try again next pass
	KindSubnetFull                // the subnet has no free address or /28: back off growth
	KindLimit                     // an instance-type limit was hit: re-read the truth from EC2
	KindThrottled                 // EC2 or the client-side budget throttled us: back off
	KindNotFound                  // the resource does not exist (any *.NotFound)
	KindUnauthorized              // the IAM policy lacks the action
	KindNoCredentials             // no usable AWS credentials
	KindUnreachable               // the EC2 or IMDS endpoint did not answer
	KindTimeout                   // the caller's deadline passed (or it was cancelled)
	KindNoFreePrefix              // the subnet has addresses but no free aligned /28: grow single addresses
	KindInUse                     // the resource is still in use (an ENI still detaching): try again shortly
)

func (k Kind) String() string {
	names := [...]string{"other", "subnet-full", "limit", "throttled", "not-found",
		"unauthorized", "no-credentials", "unreachable", "timeout", "no-free-prefix", "in-use"}
	if k < 0 || int(k) >= len(names) {
		return fmt.Sprintf("kind(%d)", int(k))
	}
	return names[k]
}

// StopsPass says whether a failure of this kind makes the rest of a pass's
// calls pointless: EC2 would refuse them too (no room in the subnet, no
// rights), or they would add to a throttle or wait on an endpoint that did
// not answer.
func (k Kind) StopsPass() bool {
	switch k {
	case KindThrottled, KindSubnetFull, KindNoFreePrefix, KindUnauthorized, KindNoCredentials,
		KindUnreachable, KindTimeout:
		return true
	}
	return false
}

// Refused says whether EC2 certainly did not carry out a call that failed
// with this kind: it answered with a refusal, so the call changed nothing.
func (k Kind) Refused() bool {
	switch k {
	case KindSubnetFull, KindNoFreePrefix, KindLimit, KindUnauthorized, KindNoCredentials:
		return true
	}
	return false
}

// Error is a classified cloud failure. Error() is one line: what failed and
// what to do about it.
type Error struct {
	Op   string // "ec2:AssignPrivateIpAddresses", "imds:GET network/interfaces/macs/" ...
	Kind Kind
	Code string // the EC2 error code, when EC2 answered with one
	Msg  string // what happened and what to do
	Err  error  // the SDK's error
}

func (e *Error) Error() string { return e.Op + ": " + e.Msg }
func (e *Error) Unwrap() error { return e.Err }

// Classify says what err means. A nil error is KindOther; callers check nil first.
func Classify(err error) Kind {
	var ce *Error
	if errors.As(err, &ce) {
		return ce.Kind
	}
	kind, _ := classify(err)
	return kind
}

// IsKind reports whether err is of kind k.
func IsKind(err error, k Kind) bool { return err != nil && Classify(err) == k }

// classify returns the kind and the EC2 error code (if any) of a raw SDK error.
func classify(err error) (Kind, string) {
	if err == nil {
		return KindOther, ""
	}
	if isNoCredentials(err) {
		return KindNoCredentials, ""
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		code := api.ErrorCode()
		return classifyCode(code, api.ErrorMessage(), httpStatus(err)), code
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return KindTimeout, ""
	}
	if isUnreachable(err) {
		return KindUnreachable, ""
	}
	if httpStatus(err) == 429 {
		return KindThrottled, ""
	}
	return KindOther, ""
}

// classifyCode maps an EC2 error code (switches, not maps: no init-time work).
func classifyCode(code, msg string, status int) Kind {
	switch code {
	case "InsufficientFreeAddressesInSubnet":
		return KindSubnetFull
	case "InsufficientCidrBlocks":
		return KindNoFreePrefix
	case "PrivateIpAddressLimitExceeded", "AttachmentLimitExceeded":
		return KindLimit
	case "UnauthorizedOperation", "AccessDenied", "AccessDeniedException":
		return KindUnauthorized
	case "AuthFailure", "InvalidClientTokenId", "SignatureDoesNotMatch", "ExpiredToken", "RequestExpired":
		return KindNoCredentials
	}
	switch {
	case code == "InvalidParameterValue" && strings.Contains(strings.ToLower(msg), "sufficient free"):
		return KindSubnetFull
	case isThrottleCode(code) || status == 429:
		return KindThrottled
	case strings.HasSuffix(code, ".NotFound"):
		return KindNotFound
	case strings.HasSuffix(code, ".InUse"):
		return KindInUse
	}
	return KindOther
}

func isThrottleCode(code string) bool {
	_, ok := retry.DefaultThrottleErrorCodes[code]
	return ok
}

// isNoCredentials recognises the credential chain's failures. The SDK has no
// typed error for them, so this matches the wrapping messages it uses.
func isNoCredentials(err error) bool {
	var ce *CredentialsError
	if errors.As(err, &ce) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "get identity:") || strings.Contains(msg, "failed to retrieve credentials") ||
		strings.Contains(msg, "failed to refresh cached credentials") || strings.Contains(msg, "no EC2 IMDS role found") ||
		strings.Contains(msg, "static credentials are empty")
}

func isUnreachable(err error) bool {
	var nerr net.Error
	var uerr *url.Error
	var oerr *net.OpError
	if errors.As(err, &oerr) || errors.As(err, &uerr) || errors.As(err, &nerr) {
		return true
	}
	return isIMDSDisabled(err)
}

func isIMDSDisabled(err error) bool {
	return strings.Contains(err.Error(), "AWS_EC2_METADATA_DISABLED")
}

func httpStatus(err error) int {
	var st interface{ HTTPStatusCode() int }
	if errors.As(err, &st) {
		return st.HTTPStatusCode()
	}
	return 0
}

// endpointURL is the URL of the failed request, when the transport said it.
func endpointURL(err error) string {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		if u, perr := url.Parse(uerr.URL); perr == nil {
			return u.Scheme + "://" + u.Host
		}
		return uerr.URL
	}
	return ""
}

// attempts is how many attempts the retryer made, 1 when it did not say.
func attempts(err error) int {
	var m *retry.MaxAttemptsError
	if errors.As(err, &m) {
		return m.Attempt
	}
	return 1
}

// oneLine keeps AWS messages (which may span lines) on one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
