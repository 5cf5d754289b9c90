package commands

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/urfave/cli/v2"

	"vpc-cni/internal/suggest"
	"vpc-cni/internal/usage"
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
	if name, ok := usage.UndefinedFlag(msg); ok {
		if isCommand(c.App.Commands, name) {
			return usagef("%s; did you mean the command 'vpcctl %s'?", msg, name)
		}
		return usagef("%s%s", msg, didYouMean(closestFlag(flags, name)))
	}
	if value, name, ok := usage.BadFlagValue(msg); ok && isDurationFlag(flags, name) {
		if _, nerr := strconv.ParseFloat(value, 64); nerr == nil {
			return usagef("--%s %s: a duration needs a unit: use %ss (or 500ms, 2m, 1h)", name, value, value)
		}
		return usagef("--%s %q: not a duration: use a number with a unit, e.g. 5s, 500ms, 2m", name, value)
	}
	return nil
}

func isDurationFlag(flags []cli.Flag, name string) bool {
	return slices.ContainsFunc(flags, func(f cli.Flag) bool {
		_, ok := f.(*cli.DurationFlag)
		return ok && slices.Contains(f.Names(), name)
	})
}

// closestFlag is the flag nearest to name by edit distance ("--state-dir"),
// or "": at most a third of the name's letters may differ, so that a word
// unlike any flag (--version) gets no suggestion.
func closestFlag(flags []cli.Flag, name string) string {
	var names []string
	for _, f := range flags {
		names = append(names, f.Names()...)
	}
	best := suggest.Closest(name, names, max(1, len(name)/3))
	switch {
	case best == "":
		return ""
	case len(best) == 1:
		return "-" + best
	}
	return "--" + best
}

func isCommand(cmds []*cli.Command, name string) bool {
	return slices.ContainsFunc(cmds, func(c *cli.Command) bool { return slices.Contains(c.Names(), name) })
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
