package cloud

import (
	"errors"
	"fmt"
	"net"
	"net/url"

	"github.com/aws/smithy-go"
)

const credentialsHint = "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE), use IRSA or EKS Pod Identity, " +
	"or give the instance an IAM role"

// ec2Error classifies an EC2 failure and says what to do about it.
func ec2Error(action, endpoint string, err error) error {
	if err == nil {
		return nil
	}
	var done *Error
	if errors.As(err, &done) {
		return err // already classified (the client-side rate budget)
	}
	kind, code := classify(err)
	if u := endpointURL(err); u != "" {
		endpoint = u
	}
	return &Error{Op: "ec2:" + action, Kind: kind, Code: code, Msg: ec2Message(kind, action, code, endpoint, err), Err: err}
}

func ec2Message(kind Kind, action, code, endpoint string, err error) string {
	detail := apiDetail(err)
	switch kind {
	case KindNoFreePrefix:
		return fmt.Sprintf("no free aligned /28 in the subnet (%s); growing with single addresses for a while; a subnet CIDR reservation for prefixes avoids this", detail)
	case KindSubnetFull:
		return fmt.Sprintf("subnet out of free addresses (%s); back off growth, add a subnet or free addresses in it", detail)
	case KindLimit:
		return fmt.Sprintf("instance-type limit reached (%s); re-read the node's ENIs from EC2", detail)
	case KindThrottled:
		n, word := attempts(err), "attempts"
		if n == 1 {
			word = "attempt"
		}
		return fmt.Sprintf("throttled by EC2 after %d %s (%s); back off and retry later", n, word, detail)
	case KindNotFound:
		return fmt.Sprintf("not found (%s)", detail)
	case KindInUse:
		return fmt.Sprintf("still in use (%s)", detail)
	case KindUnauthorized:
		return fmt.Sprintf("not authorized to call ec2:%s (%s); allow IAM action ec2:%s for the node's role or credentials "+
			"('vpcctl doctor --iam' lists every action the configuration needs that they lack)", action, code, action)
	case KindNoCredentials:
		var ce *CredentialsError
		if errors.As(err, &ce) {
			return fmt.Sprintf("no usable AWS credentials: %s; %s", ce.Error(), ce.Hint)
		}
		return fmt.Sprintf("no usable AWS credentials (%s); %s", causeDetail(err), credentialsHint)
	case KindUnreachable:
		return fmt.Sprintf("EC2 endpoint %s not reachable (%s); check the network, AWS_REGION and AWS_ENDPOINT_URL_EC2",
			endpoint, causeDetail(err))
	case KindTimeout:
		var at *AttemptTimeoutError
		if errors.As(err, &at) {
			return fmt.Sprintf("no answer from EC2 %s: request timed out after %s, the per-attempt HTTP timeout (%s); check the endpoint",
				endpoint, at.After, causeDetail(err))
		}
		return fmt.Sprintf("no answer from EC2 %s before the caller's deadline (%s); check the endpoint, or allow more time",
			endpoint, causeDetail(err))
	}
	if code != "" {
		return fmt.Sprintf("EC2 error (%s, HTTP %d)", detail, httpStatus(err))
	}
	return oneLine(err.Error())
}

// imdsError classifies an instance metadata failure.
func imdsError(path, endpoint string, err error) error {
	if err == nil {
		return nil
	}
	kind, code := classify(err)
	if httpStatus(err) == 404 {
		kind = KindNotFound
	}
	if u := endpointURL(err); u != "" {
		endpoint = u
	}
	return &Error{Op: "imds:GET " + path, Kind: kind, Code: code, Msg: imdsMessage(kind, endpoint, err), Err: err}
}

func imdsMessage(kind Kind, endpoint string, err error) string {
	switch kind {
	case KindNotFound:
		return "instance metadata has no such entry (HTTP 404)"
	case KindUnreachable:
		if isIMDSDisabled(err) {
			return "instance metadata disabled by AWS_EC2_METADATA_DISABLED; unset it on EC2"
		}
		return fmt.Sprintf("instance metadata service %s not reachable (%s); run on EC2 with IMDS enabled, "+
			"or set AWS_EC2_METADATA_SERVICE_ENDPOINT", endpoint, causeDetail(err))
	case KindTimeout:
		return fmt.Sprintf("no answer from instance metadata service %s in time (%s)", endpoint, causeDetail(err))
	}
	return oneLine(err.Error())
}

// apiDetail is "Code: message" of the EC2 error.
func apiDetail(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		if m := oneLine(api.ErrorMessage()); m != "" {
			return api.ErrorCode() + ": " + m
		}
		return api.ErrorCode()
	}
	return causeDetail(err)
}

// causeDetail is the innermost useful text: the socket error, else the SDK's.
func causeDetail(err error) string {
	var oerr *net.OpError
	if errors.As(err, &oerr) {
		return oneLine(oerr.Error())
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return oneLine(uerr.Err.Error())
	}
	var oe *smithy.OperationError
	if errors.As(err, &oe) && oe.Err != nil {
		return oneLine(oe.Err.Error())
	}
	return oneLine(err.Error())
}
