package commands

import (
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"vpc-cni/internal/printers"
)

// outputFlag is the kubectl-style -o flag.
func outputFlag(def string) cli.Flag {
	return &cli.StringFlag{
		Name: "output", Aliases: []string{"o"}, Value: def,
		Usage: "output format: table, wide, json or yaml",
	}
}

// format returns the -o value, validated.
func format(c *cli.Context) (string, error) {
	f := c.String("output")
	if slices.Contains(printers.Formats, f) {
		return f, nil
	}
	return "", usagef("--output %q: must be one of table, wide, json, yaml", f)
}

// render prints v in the -o format; tableFn writes the table forms.
func render(c *cli.Context, v any, tableFn func(*printers.Table)) error {
	f, err := format(c)
	if err != nil {
		return err
	}
	return printers.Render(c.App.Writer, f, c.Bool("no-headers"), v, tableFn)
}

func join(s []string) string { return strings.Join(s, ", ") }
