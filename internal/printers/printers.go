// Package printers writes the CLI's output in the -o formats every command
// shares: an aligned table (wide with more columns), JSON and YAML with the
// same field names, and the small words tables use.
package printers

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"
)

// Formats are the -o values every command accepts ("text" is table).
var Formats = []string{"table", "text", "wide", "json", "yaml"}

// Render prints v as JSON or YAML (stable field names for scripts) or, for
// the table formats, through tableFn; noHeaders drops the tables' header
// rows (--no-headers, for scripts that read columns).
func Render(out io.Writer, format string, noHeaders bool, v any, tableFn func(*Table)) error {
	switch format {
	case "json":
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case "yaml":
		return WriteYAML(out, v)
	}
	t := &Table{w: tabwriter.NewWriter(out, 0, 4, 2, ' ', 0), Wide: format == "wide", NoHeaders: noHeaders}
	tableFn(t)
	return t.w.Flush()
}

// Table writes aligned columns; Wide asks for every column (-o wide),
// NoHeaders for no header rows.
type Table struct {
	w         *tabwriter.Writer
	Wide      bool
	NoHeaders bool
}

// Header writes a header row, unless the table is without headers.
func (t *Table) Header(cells ...any) {
	if !t.NoHeaders {
		t.Row(cells...)
	}
}

// Row writes one line, a cell a value.
func (t *Table) Row(cells ...any) {
	parts := make([]string, len(cells))
	for i, c := range cells {
		parts[i] = fmt.Sprint(c)
	}
	fmt.Fprintln(t.w, strings.Join(parts, "\t"))
}

// Blank writes an empty line between sections.
func (t *Table) Blank() { fmt.Fprintln(t.w) }

// YesNo is a table's boolean.
func YesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// Dash is a table's empty cell.
func Dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// FirstOf is a unless it is empty (or "/", an unnamed pod), else b.
func FirstOf(a, b string) string {
	if a != "" && a != "/" {
		return a
	}
	return b
}

// CountCalls summarises a list of EC2 calls as "Action xN, ...".
func CountCalls(calls []string) string {
	m := map[string]int{}
	for _, c := range calls {
		m[c]++
	}
	return CallMap(m)
}

// CallMap is "Action xN, ..." in name order, or "none".
func CallMap(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s x%d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// Plural is "1 address", "3 addresses": the one home for counted nouns in
// messages ("1 ENIs" and "pod(s)" read wrong).
func Plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// Waiting rewrites one line on out, what and the time waited (of the time
// until deadline, unless zero), every second until stop, which erases it.
func Waiting(out io.Writer, what string, start, deadline time.Time) (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				fmt.Fprint(out, "\r\033[K")
				return
			case now := <-tick.C:
				line := fmt.Sprintf("\r\033[K%s: %s", what, now.Sub(start).Round(time.Second))
				if !deadline.IsZero() {
					line += fmt.Sprintf(" of %s", deadline.Sub(start).Round(time.Second))
				}
				fmt.Fprint(out, line)
			}
		}
	}()
	return func() { close(done); <-finished }
}

// Terminal says whether w is a terminal (progress is for people, not pipes).
func Terminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
