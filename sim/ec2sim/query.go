package ec2sim

import (
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// form is a parsed EC2 Query request. The SDK sorts keys lexically
// (Foo.1, Foo.10, Foo.2), so lists are collected by numeric index.
type form url.Values

func (f form) get(key string) string { return url.Values(f).Get(key) }

func (f form) has(key string) bool { _, ok := f[key]; return ok }

// intParam reads an optional integer; ok is false when absent.
func (f form) intParam(key string) (n int, ok bool, err *apiError) {
	if !f.has(key) {
		return 0, false, nil
	}
	n, convErr := strconv.Atoi(f.get(key))
	if convErr != nil {
		return 0, false, errInvalidParameterValue("Invalid value '%s' for %s", f.get(key), key)
	}
	return n, true, nil
}

// boolParam reads an optional boolean; ok is false when absent.
func (f form) boolParam(key string) (b bool, ok bool, err *apiError) {
	if !f.has(key) {
		return false, false, nil
	}
	b, convErr := strconv.ParseBool(f.get(key))
	if convErr != nil {
		return false, false, errInvalidParameterValue("Invalid value '%s' for %s", f.get(key), key)
	}
	return b, true, nil
}

// indexed groups the keys "prefix.N" and "prefix.N.rest" by N, ascending.
// The value for each N maps rest ("" for "prefix.N" itself) to its value.
func (f form) indexed(prefix string) []map[string]string {
	byIndex := map[int]map[string]string{}
	for key, vals := range f {
		rest, ok := strings.CutPrefix(key, prefix+".")
		if !ok || len(vals) == 0 {
			continue
		}
		numStr, sub, _ := strings.Cut(rest, ".")
		n, err := strconv.Atoi(numStr)
		if err != nil || n < 1 {
			continue
		}
		if byIndex[n] == nil {
			byIndex[n] = map[string]string{}
		}
		byIndex[n][sub] = vals[0]
	}
	idx := make([]int, 0, len(byIndex))
	for n := range byIndex {
		idx = append(idx, n)
	}
	sort.Ints(idx)
	out := make([]map[string]string, len(idx))
	for i, n := range idx {
		out[i] = byIndex[n]
	}
	return out
}

// list reads a flat string list "prefix.N".
func (f form) list(prefix string) []string {
	var out []string
	for _, m := range f.indexed(prefix) {
		if v, ok := m[""]; ok {
			out = append(out, v)
		}
	}
	return out
}

// asForm turns one indexed entry back into a form, to read its nested lists.
func asForm(m map[string]string) form {
	f := form{}
	for k, v := range m {
		f[k] = []string{v}
	}
	return f
}

// filter is one Filter.N: values within a filter are OR-ed, filters AND-ed.
type filter struct {
	name   string
	values []string
}

func (f form) filters() []filter {
	var out []filter
	for _, m := range f.indexed("Filter") {
		out = append(out, filter{name: m["Name"], values: asForm(m).list("Value")})
	}
	return out
}

// tagParam is one Tag.N; hasValue is false when the value was omitted (nil).
type tagParam struct {
	key, value string
	hasValue   bool
}

// tagsFrom reads the Key/Value pairs of indexed entries.
func tagsFrom(entries []map[string]string) []tagParam {
	var out []tagParam
	for _, m := range entries {
		v, hasValue := m["Value"]
		out = append(out, tagParam{key: m["Key"], value: v, hasValue: hasValue})
	}
	return out
}

func (f form) tags(prefix string) []tagParam { return tagsFrom(f.indexed(prefix)) }

// tagSpecs reads TagSpecification.N.ResourceType / .Tag.M.Key / .Tag.M.Value.
func (f form) tagSpecs() (resourceTypes []string, tags []tagParam) {
	for _, m := range f.indexed("TagSpecification") {
		resourceTypes = append(resourceTypes, m["ResourceType"])
		tags = append(tags, asForm(m).tags("Tag")...)
	}
	return resourceTypes, tags
}

// matchGlob matches EC2 filter wildcards: * any run, ? any one character.
func matchGlob(pattern, s string) bool {
	if !strings.ContainsAny(pattern, "*?") {
		return pattern == s
	}
	p, t := []rune(pattern), []rune(s)
	pi, ti, star, mark := 0, 0, -1, 0
	for ti < len(t) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == t[ti]):
			pi, ti = pi+1, ti+1
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, ti
			pi++
		case star >= 0:
			mark++
			pi, ti = star+1, mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// matchAny reports whether any of the candidate values matches any pattern.
func matchAny(patterns []string, candidates ...string) bool {
	for _, p := range patterns {
		for _, c := range candidates {
			if matchGlob(p, c) {
				return true
			}
		}
	}
	return false
}
