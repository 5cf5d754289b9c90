// Package usage marks an error as the caller's mistake: bad flags, a bad
// configuration value, input to fix. The CLI exits 2 on such an error, 1 on
// any other; the feature packages return these so the CLI need not guess.
package usage

import (
	"errors"
	"fmt"
)

// Error is a caller's mistake; its text is the wrapped error's.
type Error struct{ Err error }

func (u Error) Error() string { return u.Err.Error() }
func (u Error) Unwrap() error { return u.Err }

// Errorf is a new caller's mistake.
func Errorf(format string, args ...any) error {
	return Error{fmt.Errorf(format, args...)}
}

// Wrap marks err (nil stays nil) as the caller's mistake.
func Wrap(err error) error {
	if err == nil {
		return nil
	}
	return Error{err}
}

// Is says whether err, or an error it wraps, is a caller's mistake.
func Is(err error) bool {
	var u Error
	return errors.As(err, &u)
}
