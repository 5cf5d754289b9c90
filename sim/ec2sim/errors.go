package ec2sim

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
)

// apiError is an EC2 error as it goes on the wire (code without the
// Client./Server. prefix).
type apiError struct {
	Code, Message string
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

func newAPIError(code, format string, args ...any) *apiError {
	return &apiError{Code: code, Message: fmt.Sprintf(format, args...)}
}

func errInvalidParameterValue(format string, args ...any) *apiError {
	return newAPIError("InvalidParameterValue", format, args...)
}

func errENINotFound(id string) *apiError {
	return newAPIError("InvalidNetworkInterfaceID.NotFound", "The networkInterface ID '%s' does not exist", id)
}

// httpStatus is the status EC2 sends with each error code.
func httpStatus(code string) int {
	switch code {
	case "RequestLimitExceeded", "Unavailable", "ServiceUnavailable":
		return http.StatusServiceUnavailable
	case "InternalError", "ServerInternal", "InternalFailure":
		return http.StatusInternalServerError
	case "UnauthorizedOperation":
		return http.StatusForbidden
	case "AuthFailure":
		return http.StatusUnauthorized
	case "DryRunOperation":
		return http.StatusPreconditionFailed
	}
	return http.StatusBadRequest
}

// defaultMessages are EC2's texts for codes injected with FailNext.
var defaultMessages = sync.OnceValue(func() map[string]string {
	return map[string]string{
		"RequestLimitExceeded":              "Request limit exceeded.",
		"InternalError":                     "An internal error has occurred.",
		"ServerInternal":                    "An internal error has occurred.",
		"InternalFailure":                   "An internal error has occurred.",
		"Unavailable":                       "The server is overloaded and can't handle the request.",
		"ServiceUnavailable":                "The server is overloaded and can't handle the request.",
		"UnauthorizedOperation":             "You are not authorized to perform this operation.",
		"InsufficientFreeAddressesInSubnet": "The specified subnet does not have enough free addresses to satisfy the request.",
		"InsufficientCidrBlocks":            "The specified subnet does not have enough free cidr blocks to satisfy the request.",
		"PrivateIpAddressLimitExceeded":     "Number of private addresses will exceed limit.",
		"IncorrectState":                    "The resource is in an incorrect state for the request.",
	}
})

// injectedError builds a FailNext error: "Code" takes the code's usual
// message, "Code: message" sets one (EC2 tells some failures apart only by
// message, e.g. InvalidParameterValue "There aren't sufficient free Ipv4
// addresses or prefixes").
func injectedError(code, action string) *apiError {
	if c, msg, ok := strings.Cut(code, ": "); ok {
		return &apiError{Code: c, Message: msg}
	}
	msg, ok := defaultMessages()[code]
	if !ok {
		msg = fmt.Sprintf("Injected %s failure for %s.", code, action)
	}
	return &apiError{Code: code, Message: msg}
}
