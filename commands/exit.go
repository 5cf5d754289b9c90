package commands

import "vpc-cni/internal/usage"

// Exit codes scripts can rely on.
const (
	ExitOK      = 0
	ExitFailure = 1 // the operation failed (EC2, IMDS, state file, ...)
	ExitUsage   = 2 // bad usage or configuration
)

// usagef and asUsage mark the caller's mistakes (exit 2).
var (
	usagef  = usage.Errorf
	asUsage = usage.Wrap
)

func exitCode(err error) int {
	switch {
	case err == nil:
		return ExitOK
	case usage.Is(err):
		return ExitUsage
	}
	return ExitFailure
}
