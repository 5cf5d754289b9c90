// Package usage marks an error as the caller's mistake: bad flags, a bad
// configuration value, input to fix. The CLI exits 2 on such an error, 1 on
// any other; the feature packages return these so the CLI need not guess.
// It also reads the flag package's own mistakes (a flag not defined, a value
// it could not parse), so the CLI can say what to type instead.
package usage

import (
	"errors"
	"fmt"
	"strings"
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

// UndefinedFlag reads the flag package's `flag provided but not defined:
// -name` (urfave/cli passes its words through). String cuts, not a package
// regexp: every plugin start would compile it.
func UndefinedFlag(msg string) (name string, ok bool) {
	rest, ok := strings.CutPrefix(msg, "flag provided but not defined: ")
	return strings.TrimLeft(rest, "-"), ok && strings.HasPrefix(rest, "-")
}

// BadFlagValue reads `invalid value "V" for flag -name: parse error`.
func BadFlagValue(msg string) (value, name string, ok bool) {
	rest, ok := strings.CutPrefix(msg, `invalid value "`)
	if !ok {
		return "", "", false
	}
	value, rest, ok = strings.Cut(rest, `" for flag -`)
	if !ok {
		return "", "", false
	}
	name, ok = strings.CutSuffix(rest, ": parse error")
	return value, strings.TrimLeft(name, "-"), ok
}
