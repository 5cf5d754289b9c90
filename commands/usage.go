package commands

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"vpc-cni/internal/suggest"
)

// explainFlagError rewrites the flag package's terse errors: a mistyped
// flag gets the nearest one, and a bare number given to a duration flag gets
// the fix ("use 5s"). nil: nothing to add.
func explainFlagError(c *cli.Context, err error) error {
	flags := c.App.Flags
	if c.Command != nil && c.Command.Name != "" {
		flags = c.Command.Flags
	}
	msg := err.Error()
	if name, ok := undefinedFlag(msg); ok {
		return usagef("%s%s", msg, didYouMean(cli.SuggestFlag(flags, name, true)))
	}
	if value, name, ok := badFlagValue(msg); ok && isDurationFlag(flags, name) {
		if _, nerr := strconv.ParseFloat(value, 64); nerr == nil {
			return usagef("--%s %s: a duration needs a unit: use %ss (or 500ms, 2m, 1h)", name, value, value)
		}
		return usagef("--%s %q: not a duration: use a number with a unit, e.g. 5s, 500ms, 2m", name, value)
	}
	return nil
}

// undefinedFlag reads the flag package's `flag provided but not defined:
// -name` (urfave/cli passes its words through). String cuts, not a package
// regexp: every plugin start would compile it.
func undefinedFlag(msg string) (name string, ok bool) {
	rest, ok := strings.CutPrefix(msg, "flag provided but not defined: ")
	return strings.TrimLeft(rest, "-"), ok && strings.HasPrefix(rest, "-")
}

// badFlagValue reads `invalid value "V" for flag -name: parse error`.
func badFlagValue(msg string) (value, name string, ok bool) {
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

func isDurationFlag(flags []cli.Flag, name string) bool {
	for _, f := range flags {
		if _, ok := f.(*cli.DurationFlag); ok {
			for _, n := range f.Names() {
				if n == name {
					return true
				}
			}
		}
	}
	return false
}

// didYouMean is a flag suggestion's tail of a message, or "" without one.
func didYouMean(flag string) string {
	if flag == "" {
		return ""
	}
	return fmt.Sprintf("; did you mean %s?", flag)
}

// commandSuggestion is the nearest command's tail of a message, or "".
func commandSuggestion(cmds []*cli.Command, name string) string {
	var names []string
	for _, c := range cmds {
		names = append(names, c.Names()...)
	}
	best := suggest.Closest(name, names, 2)
	if best == "" {
		return ""
	}
	return fmt.Sprintf("; did you mean %q?", best)
}
