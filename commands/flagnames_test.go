package commands

import (
	"io"
	"slices"
	"testing"

	"github.com/urfave/cli/v2"
)

// Every flag of every command, the global ones added after the command
// included, has the names urfave/cli would give it: namesOf skips cli's
// cleaning of a v1-style "name, alias", so no name may need it.
func TestFlagNamesAreClean(t *testing.T) {
	app := newApp(io.Discard, io.Discard)
	seen := 0
	check := func(where string, fs []cli.Flag) {
		for _, f := range fs {
			seen++
			if got, want := namesOf(f), f.Names(); !slices.Equal(got, want) {
				t.Errorf("%s: flag names %q, urfave/cli reads %q", where, got, want)
			}
		}
	}
	check("vpcctl", app.Flags)
	walkCommands(app.Commands, func(c *cli.Command) { check(c.FullName(), c.Flags) })
	if seen < 100 {
		t.Fatalf("checked %d flags: the walk is broken", seen)
	}
}
