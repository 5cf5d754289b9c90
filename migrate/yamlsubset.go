package migrate

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The YAML that `kubectl get -o yaml`, `helm template` and hand-written
// manifests use: block mappings and sequences (also at their key's indent),
// plain, quoted and block scalars, flow collections, comments, documents.
// What it does not interpret (anchors, aliases, tags, complex keys) it keeps
// as unreadYAML text, so a caller never mistakes it for a value. Written here
// rather than linked, because this binary is also the CNI plugin and every
// module it links costs every pod's start-up. It reads each line once (a
// nested item is an offset into its line, not a copy), so its time is linear
// in the input; FuzzYAMLReaderAgreesWithSigsYAML holds it to sigs.k8s.io/yaml.

// yamlMap is a mapping in document order; keys are unique.
type yamlMap []yamlPair

type yamlPair struct {
	Key yamlScalar
	Val any // yamlMap, []any, yamlScalar, unreadYAML, or nil (null)
}

// yamlScalar is a scalar's text; Plain when it was unquoted (YAML then
// resolves it: "1", "true", "null" are not strings to a YAML library).
type yamlScalar struct {
	Text  string
	Plain bool
}

// unreadYAML is a node this reader does not interpret, as written.
type unreadYAML string

// maxYAMLDepth bounds nesting: deeper is refused rather than recursed into.
const maxYAMLDepth = 200

type yline struct {
	num    int    // 1-based line number, for messages
	indent int    // columns before text
	text   string // from indent on, trailing blanks trimmed
	raw    string // the whole line, for block scalars
	open   bool   // the input's last line, with no line break after it
}

type yamlParser struct {
	lines []yline
	i     int
	depth int
}

// parseYAMLDocs parses every document of data into maps, slices and strings
// (see plainTree); unread nodes stay unreadYAML.
func parseYAMLDocs(data []byte) ([]any, error) {
	nodes, err := parseYAMLNodes(data)
	out := make([]any, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, plainTree(n))
	}
	return out, err
}

// parseYAMLNodes parses every non-empty document of data.
func parseYAMLNodes(data []byte) ([]any, error) {
	if !utf8.Valid(data) {
		return nil, errors.New("not UTF-8 text (a UTF-16 file? save it as UTF-8)")
	}
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	if i := strings.IndexAny(text, "\r\u0085\u2028\u2029"); i >= 0 {
		return nil, fmt.Errorf("line %d: a line break other than \\n (or \\r\\n), which this reader does not read", strings.Count(text[:i], "\n")+1)
	}
	text = strings.TrimPrefix(text, "\ufeff")
	var docs []any
	var cur []yline
	flush := func() error {
		p := &yamlParser{lines: cur}
		v, err := p.node(-1)
		if err == nil && p.next() {
			err = p.errorf("indented less than the document's first line")
		}
		if s, ok := v.(yamlScalar); v != nil && !(ok && s.Plain && isNull(s.Text)) { // a null document is no document
			docs = append(docs, v)
		}
		cur = nil
		return err
	}
	all := strings.Split(text, "\n")
	for n, l := range all {
		if marker(l, "---") || marker(l, "...") {
			if rest := strings.TrimLeft(l[3:], " \t"); rest != "" && rest[0] != '#' {
				return docs, fmt.Errorf("line %d: content on a %q line, which this reader does not read", n+1, l[:3])
			}
			if err := flush(); err != nil {
				return docs, err
			}
			continue
		}
		yl, err := splitLine(n+1, l)
		if err != nil {
			return docs, err
		}
		yl.open = n == len(all)-1
		cur = append(cur, yl)
	}
	return docs, flush()
}

func marker(l, m string) bool {
	return strings.HasPrefix(l, m) && (len(l) == 3 || l[3] == ' ' || l[3] == '\t')
}

func splitLine(num int, l string) (yline, error) {
	t := strings.TrimLeft(l, " ")
	yl := yline{num: num, indent: len(l) - len(t), text: strings.TrimRight(t, " \t"), raw: l}
	if t != "" && t[0] == '\t' {
		if s := strings.TrimLeft(t, " \t"); s != "" && s[0] != '#' {
			return yl, fmt.Errorf("line %d: a tab in the indentation (YAML indents with spaces)", num)
		}
	}
	return yl, nil
}

func (p *yamlParser) errorf(format string, a ...any) error {
	if p.i < len(p.lines) {
		l := p.lines[p.i]
		return fmt.Errorf("line %d (%q): %s", l.num, l.text, fmt.Sprintf(format, a...))
	}
	return fmt.Errorf("at the end: %s", fmt.Sprintf(format, a...))
}

func blank(text string) bool {
	return text == "" || text[0] == '#' || text[0] == '\t' && blank(strings.TrimLeft(text, " \t"))
}

// next skips blank and comment lines; false at the end.
func (p *yamlParser) next() bool {
	for ; p.i < len(p.lines); p.i++ {
		if !blank(p.lines[p.i].text) {
			return true
		}
	}
	return false
}

func isItem(text string) bool { return text == "-" || strings.HasPrefix(text, "- ") }

// node parses the node starting at the next line if it is indented more
// than parent; nil (null) if none is.
func (p *yamlParser) node(parent int) (any, error) {
	if !p.next() || p.lines[p.i].indent <= parent {
		return nil, nil
	}
	if p.depth++; p.depth > maxYAMLDepth {
		return nil, p.errorf("nested deeper than %d levels", maxYAMLDepth)
	}
	defer func() { p.depth-- }()
	l := p.lines[p.i]
	if isItem(l.text) {
		return p.sequence(l.indent)
	}
	if _, _, ok := splitKey(l.text); ok {
		return p.mapping(l.indent)
	}
	return p.value(parent, l.text)
}

func (p *yamlParser) sequence(indent int) ([]any, error) {
	out := []any{}
	for p.next() {
		l := p.lines[p.i]
		if l.indent != indent || !isItem(l.text) {
			if l.indent > indent {
				return nil, p.errorf("indented more than its sequence")
			}
			break
		}
		rest := strings.TrimLeft(l.text[1:], " ")
		var v any
		var err error
		if blank(rest) {
			p.i++
			v, err = p.node(indent)
		} else {
			// The item's content is a node at its own column: "- name: x".
			p.lines[p.i].indent, p.lines[p.i].text = indent+len(l.text)-len(rest), rest
			v, err = p.node(indent)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func (p *yamlParser) mapping(indent int) (yamlMap, error) {
	var out yamlMap
	seen := map[string]bool{}
	for p.next() {
		l := p.lines[p.i]
		if l.indent != indent || isItem(l.text) {
			if l.indent > indent {
				return nil, p.errorf("indented more than its mapping")
			}
			break
		}
		key, val, ok := splitKey(l.text)
		switch {
		case !ok:
			return nil, p.errorf(`not "key: value" nor a list item`)
		case seen[key.Text]:
			return nil, p.errorf("key %q appears twice in one mapping", key.Text)
		}
		seen[key.Text] = true
		var v any
		var err error
		if blank(val) {
			p.i++
			v, err = p.blockValue(indent)
		} else {
			p.lines[p.i].text = val
			v, err = p.value(indent, val)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, yamlPair{Key: key, Val: v})
	}
	return out, nil
}

// blockValue is the node after "key:" with nothing more on its line: deeper
// lines, or a sequence at the key's own indent.
func (p *yamlParser) blockValue(indent int) (any, error) {
	if p.next() {
		if l := p.lines[p.i]; l.indent == indent && isItem(l.text) {
			return p.sequence(indent)
		}
	}
	return p.node(indent)
}

// value parses the scalar or flow node that starts at the current line's
// text (given) and may go on over lines indented more than parent.
func (p *yamlParser) value(parent int, text string) (any, error) {
	switch text[0] {
	case '|', '>':
		return p.blockScalar(parent, text)
	case '&', '*', '!', '?', '%', '@', '`':
		return p.unread(parent), nil
	case '{', '[':
		return p.flow(parent)
	case '"', '\'':
		return p.quoted(parent)
	}
	return p.plain(parent)
}

// unread takes the current line and every line deeper than parent as text.
func (p *yamlParser) unread(parent int) unreadYAML {
	parts := []string{p.lines[p.i].text}
	for p.i++; p.i < len(p.lines); p.i++ {
		if l := p.lines[p.i]; !blank(l.text) && l.indent <= parent {
			break
		}
		parts = append(parts, p.lines[p.i].text)
	}
	return unreadYAML(strings.TrimRight(strings.Join(parts, "\n"), "\n"))
}

// continuation says whether line i goes on a scalar of parent's node.
func (p *yamlParser) continuation(i, parent int) bool {
	return i < len(p.lines) && p.lines[i].indent > parent && !blank(p.lines[i].text)
}

// plain reads a plain scalar, folding its continuation lines.
func (p *yamlParser) plain(parent int) (any, error) {
	var b strings.Builder
	for {
		text := p.lines[p.i].text
		s, comment := cutComment(text)
		if strings.Contains(s, ": ") || strings.Contains(s, ":\t") || strings.HasSuffix(s, ":") {
			return nil, p.errorf("a plain value holding \": \" (quote it)")
		}
		b.WriteString(s)
		p.i++
		blanks := p.blanksBefore(parent)
		if !p.continuation(p.i, parent) {
			break
		}
		if comment {
			return nil, p.errorf("a plain value going on after a comment")
		}
		if blanks == 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strings.Repeat("\n", blanks))
	}
	return yamlScalar{Text: b.String(), Plain: true}, nil
}

// blanksBefore counts the blank lines from i up to a continuation line of
// parent's node, and leaves i at the first of them otherwise.
func (p *yamlParser) blanksBefore(parent int) int {
	n := 0
	for j := p.i; j < len(p.lines); j++ {
		if l := p.lines[j]; l.text != "" {
			if p.continuation(j, parent) {
				p.i = j
				return n
			}
			return 0
		}
		n++
	}
	return 0
}

// cutComment drops a " #" comment from a plain scalar's line.
func cutComment(s string) (string, bool) {
	for i := 1; i < len(s); i++ {
		if s[i] == '#' && (s[i-1] == ' ' || s[i-1] == '\t') {
			return strings.TrimRight(s[:i], " \t"), true
		}
	}
	return s, false
}

// extent joins the current line with the lines up to the end of parent's
// node (blank ones as ""), for a quoted or flow node that may go on.
func (p *yamlParser) extent(parent int) string {
	parts := []string{p.lines[p.i].text}
	for j := p.i + 1; j < len(p.lines); j++ {
		if l := p.lines[j]; l.text != "" && l.indent <= parent {
			break
		}
		parts = append(parts, p.lines[j].text)
	}
	return strings.Join(parts, "\n")
}

// consume moves past the lines a node of n bytes of text took, and checks
// that nothing but a comment follows it on its last line.
func (p *yamlParser) consume(text string, n int, what string) error {
	p.i += strings.Count(text[:n], "\n")
	rest, _, _ := strings.Cut(text[n:], "\n")
	if rest != "" && (rest[0] != ' ' && rest[0] != '\t' || !blank(strings.TrimLeft(rest, " \t"))) {
		return p.errorf("text after a %s", what)
	}
	p.i++
	return nil
}

func (p *yamlParser) quoted(parent int) (any, error) {
	text := p.extent(parent)
	s, n, err := scanQuoted(text)
	if err != nil {
		return nil, p.errorf("%v", err)
	}
	return yamlScalar{Text: s}, p.consume(text, n, "quoted value")
}

func (p *yamlParser) flow(parent int) (any, error) {
	text := p.extent(parent)
	f := flowParser{text: text, depth: p.depth}
	v, err := f.node()
	if err != nil {
		return nil, p.errorf("%v", err)
	}
	return v, p.consume(text, f.i, "flow collection")
}

// splitKey cuts "key: value" at the key's ':' (followed by a blank or the
// end); ok is false when text is no mapping entry.
func splitKey(text string) (key yamlScalar, val string, ok bool) {
	switch text[0] {
	case '"', '\'':
		s, n, qerr := scanQuoted(text)
		if qerr != nil {
			return key, "", false // a quoted scalar value going on over lines
		}
		rest := strings.TrimLeft(text[n:], " \t")
		if rest == ":" || strings.HasPrefix(rest, ": ") || strings.HasPrefix(rest, ":\t") {
			return yamlScalar{Text: s}, strings.TrimLeft(rest[1:], " \t"), true
		}
		return key, "", false
	case '[', '{', '&', '*', '!', '?', '|', '>', '%', '@', '`', '#':
		return key, "", false
	}
	plain, _ := cutComment(text)
	i := strings.Index(plain, ": ")
	if j := strings.Index(plain, ":\t"); j >= 0 && (i < 0 || j < i) {
		i = j
	}
	if i < 0 && strings.HasSuffix(plain, ":") {
		i = len(plain) - 1
	}
	if i <= 0 {
		return key, "", false
	}
	k := strings.TrimRight(plain[:i], " \t")
	return yamlScalar{Text: k, Plain: true}, strings.TrimLeft(text[i+1:], " \t"), true
}

// plainTree turns parsed nodes into what the env reader walks:
// map[string]any, []any, string, nil, and unreadYAML.
func plainTree(n any) any {
	switch v := n.(type) {
	case yamlMap:
		m := make(map[string]any, len(v))
		for _, kv := range v {
			m[kv.Key.Text] = plainTree(kv.Val)
		}
		return m
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = plainTree(e)
		}
		return out
	case yamlScalar:
		if v.Plain && isNull(v.Text) {
			return nil
		}
		return v.Text
	}
	return n
}

func isNull(s string) bool { return s == "" || s == "~" || s == "null" || s == "Null" || s == "NULL" }
