package commands

import (
	"errors"
	"fmt"
)

// Exit codes scripts can rely on.
const (
	ExitOK      = 0
	ExitFailure = 1 // the operation failed (EC2, IMDS, state file, ...)
	ExitUsage   = 2 // bad usage or configuration
)

// usageError marks an error as the caller's mistake (exit 2).
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

func asUsage(err error) error {
	if err == nil {
		return nil
	}
	return usageError{err}
}

func exitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var u usageError
	if errors.As(err, &u) {
		return ExitUsage
	}
	return ExitFailure
}
