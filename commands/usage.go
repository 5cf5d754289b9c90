package commands

import (
	"fmt"
	"regexp"
	"strconv"

	"github.com/urfave/cli/v2"
)

var (
	// The flag package's words; urfave/cli passes them through.
	undefinedFlag = regexp.MustCompile(`^flag provided but not defined: -+(\S+)$`)
	badFlagValue  = regexp.MustCompile(`^invalid value "([^"]*)" for flag -+(\S+): parse error$`)
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
	if m := undefinedFlag.FindStringSubmatch(msg); m != nil {
		return usagef("%s%s", msg, didYouMean(cli.SuggestFlag(flags, m[1], true)))
	}
	if m := badFlagValue.FindStringSubmatch(msg); m != nil && isDurationFlag(flags, m[2]) {
		if _, nerr := strconv.ParseFloat(m[1], 64); nerr == nil {
			return usagef("--%s %s: a duration needs a unit: use %ss (or 500ms, 2m, 1h)", m[2], m[1], m[1])
		}
		return usagef("--%s %q: not a duration: use a number with a unit, e.g. 5s, 500ms, 2m", m[2], m[1])
	}
	return nil
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
	best := ""
	for _, c := range cmds {
		for _, n := range c.Names() {
			if d := editDistance(name, n); d <= 2 && (best == "" || d < editDistance(name, best)) {
				best = n
			}
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("; did you mean %q?", best)
}

// editDistance is the Levenshtein distance of two short words.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
