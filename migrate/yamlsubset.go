package migrate

import (
	"fmt"
	"strconv"
	"strings"
)

// The block-style YAML that `kubectl get -o yaml` prints (and hand-written
// manifests mostly use): mappings, sequences (also at their key's indent),
// plain and quoted scalars, folded continuation lines, | and > block
// scalars, comments, `---` between documents. Flow collections other than
// {} and [] are kept as text: the env of a container never needs them. A
// dozen-line subset rather than a YAML module, because this binary is also
// the CNI plugin and every module it links costs every pod's start-up.

type yamlParser struct {
	lines []string
	i     int
}

// parseYAMLDocs parses every document of data into maps, slices and strings.
func parseYAMLDocs(data []byte) ([]any, error) {
	var docs []any
	var cur []string
	flush := func() error {
		p := &yamlParser{lines: cur}
		v, err := p.block(0)
		if err == nil && p.next() {
			err = fmt.Errorf("line %q: indented less than the document's first line", strings.TrimSpace(p.lines[p.i]))
		}
		if v != nil {
			docs = append(docs, v)
		}
		cur = nil
		return err
	}
	for _, l := range strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n") {
		if l == "---" || strings.HasPrefix(l, "--- ") || l == "..." {
			if err := flush(); err != nil {
				return nil, err
			}
			continue
		}
		cur = append(cur, strings.ReplaceAll(l, "\t", " "))
	}
	return docs, flush()
}

// next skips blank and comment lines; false at the end.
func (p *yamlParser) next() bool {
	for ; p.i < len(p.lines); p.i++ {
		if t := strings.TrimSpace(p.lines[p.i]); t != "" && !strings.HasPrefix(t, "#") {
			return true
		}
	}
	return false
}

func (p *yamlParser) at() (indent int, text string) {
	l := p.lines[p.i]
	t := strings.TrimLeft(l, " ")
	return len(l) - len(t), stripComment(t)
}

func isItem(text string) bool { return text == "-" || strings.HasPrefix(text, "- ") }

// block parses the node starting at the next line if it is indented at
// least min; nil if none is.
func (p *yamlParser) block(min int) (any, error) {
	if !p.next() {
		return nil, nil
	}
	indent, text := p.at()
	if indent < min {
		return nil, nil
	}
	if isItem(text) {
		return p.sequence(indent)
	}
	return p.mapping(indent)
}

func (p *yamlParser) sequence(indent int) ([]any, error) {
	out := []any{}
	for p.next() {
		in, text := p.at()
		if in != indent || !isItem(text) {
			break
		}
		rest := strings.TrimLeft(text[1:], " ")
		if rest == "" {
			p.i++
			v, err := p.block(indent + 1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
			continue
		}
		if _, _, err := splitKey(rest); err != nil && !isItem(rest) { // "- linux": a scalar item
			p.i++
			v, err := p.value(indent, rest)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
			continue
		}
		// The item's content starts a node at its own column: "- name: x".
		col := indent + len(text) - len(rest)
		p.lines[p.i] = strings.Repeat(" ", col) + rest
		v, err := p.block(col)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func (p *yamlParser) mapping(indent int) (map[string]any, error) {
	out := map[string]any{}
	for p.next() {
		in, text := p.at()
		if in != indent || isItem(text) {
			if in > indent {
				return nil, fmt.Errorf("line %q: indented more than its mapping", strings.TrimSpace(text))
			}
			break
		}
		key, val, err := splitKey(text)
		if err != nil {
			return nil, err
		}
		p.i++
		if out[key], err = p.value(indent, val); err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
	}
	return out, nil
}

// value is what follows "key:" on a mapping line at indent.
func (p *yamlParser) value(indent int, val string) (any, error) {
	switch {
	case val == "":
		if !p.next() {
			return nil, nil
		}
		if in, text := p.at(); in > indent || in == indent && isItem(text) {
			return p.block(in)
		}
		return nil, nil
	case val[0] == '|' || val[0] == '>':
		return p.blockScalar(indent), nil
	}
	for p.i < len(p.lines) { // a long scalar folded onto more-indented lines
		l := p.lines[p.i]
		t := strings.TrimSpace(l)
		if t == "" || len(l)-len(strings.TrimLeft(l, " ")) <= indent {
			break
		}
		val += " " + stripComment(t)
		p.i++
	}
	return scalar(val)
}

// blockScalar takes the lines indented deeper than indent (and blank ones
// among them) as text; the env never needs their exact folding.
func (p *yamlParser) blockScalar(indent int) string {
	var out []string
	for ; p.i < len(p.lines); p.i++ {
		l := p.lines[p.i]
		if strings.TrimSpace(l) != "" && len(l)-len(strings.TrimLeft(l, " ")) <= indent {
			break
		}
		out = append(out, strings.TrimSpace(l))
	}
	return strings.TrimRight(strings.Join(out, "\n"), "\n")
}

// splitKey cuts "key: value" at the first ": " (or final ':') outside quotes.
func splitKey(text string) (key, val string, err error) {
	q := byte(0)
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case q != 0:
			if c == q {
				q = 0
			}
		case c == '"' || c == '\'':
			q = c
		case c == ':' && (i+1 == len(text) || text[i+1] == ' '):
			k, err := scalar(strings.TrimSpace(text[:i]))
			s, _ := k.(string)
			return s, strings.TrimSpace(text[i+1:]), err
		}
	}
	return "", "", fmt.Errorf("line %q is not \"key: value\" nor a list item", text)
}

// stripComment drops a " #" comment outside quotes.
func stripComment(t string) string {
	q := byte(0)
	for i := 0; i < len(t); i++ {
		switch c := t[i]; {
		case q != 0:
			if c == q {
				q = 0
			}
		case c == '"' || c == '\'':
			if i == 0 || t[i-1] == ' ' {
				q = c
			}
		case c == '#' && (i == 0 || t[i-1] == ' '):
			return strings.TrimRight(t[:i], " ")
		}
	}
	return t
}

func scalar(s string) (any, error) {
	switch {
	case s == "{}":
		return map[string]any{}, nil
	case s == "[]":
		return []any{}, nil
	case len(s) >= 2 && s[0] == '\'' && s[len(s)-1] == '\'':
		return strings.ReplaceAll(s[1:len(s)-1], "''", "'"), nil
	case len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"':
		v, err := strconv.Unquote(s)
		if err != nil {
			return nil, fmt.Errorf("%s: not a double-quoted string this reader knows", s)
		}
		return v, nil
	case s != "" && (s[0] == '"' || s[0] == '\''):
		return nil, fmt.Errorf("%s: an unterminated quoted string", s)
	}
	return s, nil
}
