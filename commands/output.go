package commands

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"
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
	switch f {
	case "table", "text", "wide", "json", "yaml":
		return f, nil
	}
	return "", usagef("--output %q: must be one of table, wide, json, yaml", f)
}

// render prints v as JSON or YAML (stable field names for scripts) or, for
// table formats, through the table function.
func render(c *cli.Context, v any, tableFn func(*table)) error {
	f, err := format(c)
	if err != nil {
		return err
	}
	return renderAs(c.App.Writer, f, v, tableFn)
}

func renderAs(out io.Writer, f string, v any, tableFn func(*table)) error {
	switch f {
	case "json":
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case "yaml":
		return writeYAML(out, v)
	}
	t := &table{w: tabwriter.NewWriter(out, 0, 4, 2, ' ', 0), wide: f == "wide"}
	tableFn(t)
	return t.w.Flush()
}

// table writes aligned columns.
type table struct {
	w    *tabwriter.Writer
	wide bool
}

func (t *table) row(cells ...any) {
	parts := make([]string, len(cells))
	for i, c := range cells {
		parts[i] = fmt.Sprint(c)
	}
	fmt.Fprintln(t.w, strings.Join(parts, "\t"))
}

func (t *table) blank() { fmt.Fprintln(t.w) }

func join(s []string) string { return strings.Join(s, ", ") }
