package migrate

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

var errUnclosed = errors.New("a quoted value not closed")

// scanQuoted reads the quoted scalar text starts with, over folded lines
// ("\n" between them; a blank line is ""); n is its length in text.
func scanQuoted(text string) (s string, n int, err error) {
	q := text[0]
	var b strings.Builder
	keep := 0 // bytes of b that folding must not trim (escapes)
	for i := 1; i < len(text); i++ {
		c := text[i]
		switch {
		case c == q && q == '\'' && i+1 < len(text) && text[i+1] == '\'':
			b.WriteByte('\'')
			i++
			keep = b.Len()
		case c == q:
			return b.String(), i + 1, nil
		case c == '\n':
			i = fold(&b, text, i, keep) - 1
		case c == '\\' && q == '"':
			if i+1 < len(text) && text[i+1] == '\n' {
				i++ // an escaped line break joins the lines with nothing
				for i+1 < len(text) && text[i+1] == '\n' {
					b.WriteByte('\n')
					i++
				}
				keep = b.Len()
				continue
			}
			m, err := unescape(&b, text, i)
			if err != nil {
				return "", 0, err
			}
			i += m
			keep = b.Len()
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, errUnclosed
}

// fold replaces the line break at text[i] (and the blank lines after it)
// as YAML folds them: one space, or a newline per blank line; trailing
// blanks before it go. It returns the index after them.
func fold(b *strings.Builder, text string, i, keep int) int {
	s := b.String()
	trimmed := strings.TrimRight(s[keep:], " \t")
	b.Reset()
	b.WriteString(s[:keep] + trimmed)
	j := i + 1
	for j < len(text) && text[j] == '\n' {
		j++
	}
	if j-i == 1 {
		b.WriteByte(' ')
	} else {
		b.WriteString(strings.Repeat("\n", j-i-1))
	}
	for j < len(text) && (text[j] == ' ' || text[j] == '\t') {
		j++
	}
	return j
}

// simpleEscapes is an array, not a map, so the linker lays it out and no
// initialiser builds it at every start of the binary. Every entry is non-empty.
var simpleEscapes = [256]string{
	'0': "\x00", 'a': "\a", 'b': "\b", 't': "\t", '\t': "\t", 'n': "\n", 'v': "\v", 'f': "\f", 'r': "\r",
	'e': "\x1b", ' ': " ", '"': "\"", '/': "/", '\\': "\\", 'N': "\u0085", '_': "\u00a0", 'L': "\u2028", 'P': "\u2029",
}

// unescape writes the escape at text[i] ('\\'); m is how many bytes after
// the backslash it took.
func unescape(b *strings.Builder, text string, i int) (m int, err error) {
	if i+1 >= len(text) {
		return 0, errUnclosed
	}
	c := text[i+1]
	if s := simpleEscapes[c]; s != "" {
		b.WriteString(s)
		return 1, nil
	}
	width := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
	if width == 0 || i+2+width > len(text) {
		return 0, fmt.Errorf("an escape \\%c a YAML double-quoted value does not have", c)
	}
	r, perr := strconv.ParseUint(text[i+2:i+2+width], 16, 32)
	if perr != nil || r > utf8.MaxRune || r >= 0xD800 && r <= 0xDFFF {
		return 0, fmt.Errorf("an escape \\%s that is no character", text[i+1:i+2+width])
	}
	b.WriteRune(rune(r))
	return 1 + width, nil
}

// blockScalar reads a | or > scalar whose header is text; its lines are
// those indented more than parent (and blank ones among them).
func (p *yamlParser) blockScalar(parent int, header string) (any, error) {
	chomp, rest := byte(0), header[1:]
	if rest != "" && (rest[0] == '-' || rest[0] == '+') {
		chomp, rest = rest[0], rest[1:]
	}
	if rest != "" && rest[0] != ' ' && rest[0] != '\t' && rest[0] != '#' {
		if rest[0] >= '1' && rest[0] <= '9' {
			return p.unread(parent), nil // an explicit indentation
		}
		return nil, p.errorf("a block scalar header this reader does not know")
	}
	if !blank(strings.TrimLeft(rest, " \t")) || rest != "" && rest[0] == '#' {
		return nil, p.errorf("text after a block scalar's header")
	}
	start := p.i
	p.i++
	lines, ok := p.blockLines(parent)
	if !ok || (header[0] == '>' && moreIndented(lines)) {
		p.i = start
		return p.unread(parent), nil
	}
	trailing := 0
	for i := len(lines) - 1; i >= 0 && lines[i] == ""; i-- {
		trailing++
	}
	body := strings.Join(lines[:len(lines)-trailing], "\n")
	if header[0] == '>' {
		body = foldLines(lines[:len(lines)-trailing])
	}
	breaks := 0 // line breaks after the content: its last line's, and the blank lines'
	for _, l := range p.lines[p.i-trailing-1 : p.i] {
		if !l.open {
			breaks++
		}
	}
	switch {
	case chomp == '-' || body == "" && chomp != '+':
		return yamlScalar{Text: body}, nil
	case chomp == '+':
		return yamlScalar{Text: body + strings.Repeat("\n", breaks)}, nil
	}
	return yamlScalar{Text: body + strings.Repeat("\n", min(breaks, 1))}, nil
}

// blockLines takes a block scalar's lines without their indentation; false
// when a leading blank line is longer than the content's indentation, or
// there is no content (YAML's rules there are not this reader's).
func (p *yamlParser) blockLines(parent int) ([]string, bool) {
	m := -1
	var lines []string
	for ; p.i < len(p.lines); p.i++ {
		l := p.lines[p.i]
		if strings.TrimLeft(l.raw, " ") == "" {
			if m >= 0 && len(l.raw) > m {
				lines = append(lines, l.raw[m:])
			} else {
				lines = append(lines, "")
			}
			if m < 0 && len(l.raw) > parent+1 {
				return lines, false
			}
			continue
		}
		if m < 0 {
			if l.indent < max(parent+1, 1) || l.raw[l.indent] == '\t' { // YAML indents content by 1 at least
				break
			}
			m = l.indent
		}
		if l.indent < m {
			break
		}
		lines = append(lines, l.raw[m:])
	}
	return lines, m >= 0
}

func moreIndented(lines []string) bool {
	for _, l := range lines {
		if l != "" && (l[0] == ' ' || l[0] == '\t') {
			return true
		}
	}
	return false
}

// foldLines joins a > scalar's lines: one space between lines, a newline
// for each blank line.
func foldLines(lines []string) string {
	var b strings.Builder
	blanks := 0
	for i, l := range lines {
		switch {
		case l == "":
			blanks++
			continue
		case i > 0 && blanks == 0:
			b.WriteByte(' ')
		case i > 0 && b.Len() > 0:
			b.WriteString(strings.Repeat("\n", blanks))
		default:
			b.WriteString(strings.Repeat("\n", blanks))
		}
		blanks = 0
		b.WriteString(l)
	}
	return b.String()
}

// flowParser reads a flow collection ({...} or [...]) that may span lines.
type flowParser struct {
	text  string
	i     int
	depth int
}

func (f *flowParser) errorf(format string, a ...any) error {
	return fmt.Errorf("in a flow collection: "+format, a...)
}

// ws skips blanks, line breaks and comments.
func (f *flowParser) ws() {
	for f.i < len(f.text) {
		switch c := f.text[f.i]; {
		case c == ' ' || c == '\t' || c == '\n':
			f.i++
		case c == '#' && (f.i == 0 || strings.ContainsRune(" \t\n", rune(f.text[f.i-1]))):
			for f.i < len(f.text) && f.text[f.i] != '\n' {
				f.i++
			}
		default:
			return
		}
	}
}

func (f *flowParser) node() (any, error) {
	if f.i >= len(f.text) {
		return nil, errUnclosed
	}
	switch f.text[f.i] {
	case '[', '{':
		if f.depth++; f.depth > maxYAMLDepth {
			return nil, f.errorf("nested deeper than %d levels", maxYAMLDepth)
		}
		defer func() { f.depth-- }()
		if f.text[f.i] == '[' {
			return f.sequence()
		}
		return f.mapping()
	case '"', '\'':
		s, n, err := scanQuoted(f.text[f.i:])
		f.i += n
		return yamlScalar{Text: s}, err
	case '&', '*', '!', '?', '|', '>', '%', '@', '`', ',', ']', '}', '#':
		return nil, f.errorf("%q where this reader expects a value", f.text[f.i])
	}
	return f.plain()
}

// plain reads a plain scalar, which in a flow collection ends at , [ ] { }
// or ": " and stays on one line here.
func (f *flowParser) plain() (any, error) {
	start := f.i
	for ; f.i < len(f.text); f.i++ {
		c := f.text[f.i]
		if strings.IndexByte(",[]{}\n", c) >= 0 || c == '#' && strings.IndexByte(" \t", f.text[f.i-1]) >= 0 ||
			c == ':' && (f.i+1 == len(f.text) || strings.IndexByte(" \t\n,[]{}", f.text[f.i+1]) >= 0) {
			break
		}
	}
	s := strings.TrimRight(f.text[start:f.i], " \t")
	f.ws()
	if f.i < len(f.text) && strings.IndexByte(",]}:", f.text[f.i]) < 0 {
		return nil, f.errorf("a plain value over lines or with a flow indicator inside (quote it)")
	}
	return yamlScalar{Text: s, Plain: true}, nil
}

func (f *flowParser) sequence() (any, error) {
	out := []any{}
	f.i++
	for {
		f.ws()
		if f.i >= len(f.text) {
			return nil, errUnclosed
		}
		if f.text[f.i] == ']' {
			f.i++
			return out, nil
		}
		v, err := f.node()
		if err != nil {
			return nil, err
		}
		f.ws()
		if f.i < len(f.text) && f.text[f.i] == ':' {
			return nil, f.errorf("a key: value pair inside [ ], which this reader does not read")
		}
		out = append(out, v)
		if err := f.separator(']'); err != nil {
			return nil, err
		}
	}
}

func (f *flowParser) mapping() (any, error) {
	out := yamlMap{}
	seen := map[string]bool{}
	f.i++
	for {
		f.ws()
		if f.i >= len(f.text) {
			return nil, errUnclosed
		}
		if f.text[f.i] == '}' {
			f.i++
			return out, nil
		}
		k, err := f.node()
		if err != nil {
			return nil, err
		}
		key, ok := k.(yamlScalar)
		f.ws()
		if !ok || f.i >= len(f.text) || f.text[f.i] != ':' || seen[key.Text] {
			return nil, f.errorf("an entry that is not a unique \"key: value\"")
		}
		seen[key.Text] = true
		f.i++
		f.ws()
		var v any
		if f.i < len(f.text) && f.text[f.i] != ',' && f.text[f.i] != '}' {
			if v, err = f.node(); err != nil {
				return nil, err
			}
		}
		out = append(out, yamlPair{Key: key, Val: v})
		if err := f.separator('}'); err != nil {
			return nil, err
		}
	}
}

// separator takes the ',' between entries, or leaves the closing bracket.
func (f *flowParser) separator(end byte) error {
	f.ws()
	switch {
	case f.i >= len(f.text):
		return errUnclosed
	case f.text[f.i] == ',':
		f.i++
		return nil
	case f.text[f.i] == end:
		return nil
	}
	return f.errorf("%q where this reader expects ',' or %q", f.text[f.i], end)
}
