package cloud

import "strings"

// iniSections is a parsed AWS shared config or credentials file: section name
// ("default", "profile prod", "prod") → lower-case key → value.
type iniSections map[string]map[string]string

// parseINI reads the AWS shared file format the way aws-sdk-go-v2's
// config/internal/ini does, so a file means the same to us as to the SDK and
// the AWS CLI: "#" and ";" start comment lines (and comments after a space
// in a property line); keys are case-insensitive; values may be quoted;
// "key:" works like "key ="; an indented "k = v" under an empty "key ="
// is a sub-property (not returned); an indented line under a non-empty value
// continues it; properties before the first section are ignored.
func parseINI(data string) iniSections {
	p := iniParser{out: iniSections{}, maps: map[string]bool{}}
	for _, line := range strings.Split(data, "\n") {
		p.line(line)
	}
	return p.out
}

type iniParser struct {
	out            iniSections
	section, key   string
	maps           map[string]bool // section+"\x00"+key: the key holds sub-properties
	sectionStarted bool
}

func (p *iniParser) line(line string) {
	trimmed := strings.TrimLeft(line, " \t")
	if strings.TrimSpace(line) == "" || strings.HasPrefix(trimmed, "#") || strings.HasPrefix(trimmed, ";") {
		return
	}
	if name, ok := iniSectionName(line); ok {
		p.startSection(name)
		return
	}
	if line[0] != ' ' && line[0] != '\t' {
		if k, v, ok := splitINIProperty(strings.TrimRight(trimINIComment(line), " \t")); ok {
			p.property(strings.ToLower(k), unquoteINI(v))
		}
		return
	}
	if k, v, ok := splitINIProperty(trimmed); ok {
		p.subProperty(strings.ToLower(k), unquoteINI(v))
		return
	}
	p.continuation(trimmed)
}

func (p *iniParser) startSection(name string) {
	p.section, p.key, p.sectionStarted = name, "", true
	if p.out[name] == nil {
		p.out[name] = map[string]string{}
	}
}

func (p *iniParser) property(key, value string) {
	if !p.sectionStarted {
		return // the SDK ignores "global" properties
	}
	p.key = key
	p.out[p.section][key] = value
	delete(p.maps, p.section+"\x00"+key)
}

// subProperty: an indented "k = v". Under an empty "key =" it belongs to that
// key's map; anywhere else the SDK promotes it to a normal property.
func (p *iniParser) subProperty(key, value string) {
	if !p.sectionStarted {
		return
	}
	if p.key == "" || p.out[p.section][p.key] != "" {
		p.property(key, strings.TrimSpace(trimINIComment(value)))
		return
	}
	p.maps[p.section+"\x00"+p.key] = true
}

func (p *iniParser) continuation(text string) {
	if p.key == "" || p.maps[p.section+"\x00"+p.key] {
		return
	}
	if v := p.out[p.section][p.key]; v != "" {
		p.out[p.section][p.key] = v + "\n" + text
	}
}

// iniSectionName recognises "[ type name ] ; comment" and returns "type name"
// (or "name") with the inner whitespace run collapsed to what the SDK keeps.
func iniSectionName(line string) (string, bool) {
	s, _, _ := strings.Cut(line, "#")
	s, _, _ = strings.Cut(s, ";")
	s = strings.TrimSpace(s)
	if len(s) < 2 || s[0] != '[' || s[len(s)-1] != ']' {
		return "", false
	}
	s = strings.TrimSpace(s[1 : len(s)-1])
	i := strings.IndexAny(s, " \t")
	if i < 0 {
		return s, true
	}
	return s[:i] + " " + strings.TrimLeft(s[i:], " \t"), true
}

func trimINIComment(s string) string {
	for _, c := range []string{" #", " ;", "\t#", "\t;"} {
		s, _, _ = strings.Cut(s, c)
	}
	return s
}

// splitINIProperty splits at the first "=", or at ":" when that comes first.
func splitINIProperty(s string) (key, value string, ok bool) {
	sep := "="
	eq, colon := strings.Index(s, "="), strings.Index(s, ":")
	if eq < 0 || colon >= 0 && colon < eq {
		sep = ":"
	}
	key, value, ok = strings.Cut(s, sep)
	return strings.TrimSpace(key), strings.TrimSpace(value), ok
}

func unquoteINI(s string) string {
	if len(s) >= 2 && (s[0] == '"' && s[len(s)-1] == '"' || s[0] == '\'' && s[len(s)-1] == '\'') {
		return s[1 : len(s)-1]
	}
	return s
}
