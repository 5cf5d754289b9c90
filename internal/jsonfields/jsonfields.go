// Package jsonfields decodes and encodes the JSON objects the plugin reads
// and writes on every pod start without encoding/json's reflection over a
// struct's fields. A process lives for one call, so encoding/json's first
// use of each struct type (its field list, each field's encoder, sorted) is
// paid on every ADD: a third of a million instructions for the node record
// alone. Decoding here goes key by key into the pointers the caller names,
// so only the values' own types (strings, numbers, addresses, times) are
// decoded by encoding/json; encoding writes keys and values in the order a
// struct declares them, as encoding/json does. Callers keep their struct
// tags, and a test per type holds the two ways to the same bytes.
package jsonfields

import (
	"encoding"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Decode decodes the JSON object data into fields, the pointers to decode
// each key into, as encoding/json decodes a struct: a key matches exactly
// or else without regard to case, unknown keys are skipped, null leaves a
// value as it was, and a value of the wrong type is a *json.UnmarshalTypeError
// whose Field names the key.
func Decode(data []byte, fields map[string]any) error {
	return eachField(data, func(key string, raw []byte) error { return decodeKey(key, raw, fields) })
}

// DecodeKeys is Decode of an object already split into its keys' values.
func DecodeKeys(obj map[string]json.RawMessage, fields map[string]any) error {
	for key, raw := range obj {
		if err := decodeKey(key, raw, fields); err != nil {
			return err
		}
	}
	return nil
}

func decodeKey(key string, raw []byte, fields map[string]any) error {
	into := lookup(fields, key)
	if into == nil {
		return nil
	}
	if err := decodeValue(raw, into); err != nil {
		return keyed(key, err)
	}
	return nil
}

// Fields are the keys of a nested object, decoded as Decode decodes the
// outer one.
type Fields map[string]any

// decodeValue decodes raw into into: the plain cases (a string with no
// escapes, a decimal int, a bool, a value with its own decoder) directly,
// since each json.Unmarshal costs thousands of instructions before its
// value; anything else, and null, as json.Unmarshal does.
func decodeValue(raw []byte, into any) error {
	switch p := into.(type) {
	case Fields:
		return Decode(raw, p)
	case *string:
		if s, ok := plainString(raw); ok {
			*p = s
			return nil
		}
	case *int:
		if n, err := strconv.Atoi(string(raw)); err == nil {
			*p = n
			return nil
		}
	case *bool:
		if s := string(raw); s == "true" || s == "false" {
			*p = s == "true"
			return nil
		}
	case json.Unmarshaler:
		return p.UnmarshalJSON(raw)
	case encoding.TextUnmarshaler:
		if s, ok := plainString(raw); ok {
			return p.UnmarshalText([]byte(s))
		}
	}
	return json.Unmarshal(raw, into)
}

// plainString is the JSON string raw without its quotes when it has no
// escapes nor anything encoding/json would replace.
func plainString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	body := raw[1 : len(raw)-1]
	for _, c := range body {
		if c < 0x20 || c == '\\' || c == '"' {
			return "", false
		}
	}
	if !utf8.Valid(body) {
		return "", false
	}
	return string(body), true
}

func lookup(fields map[string]any, key string) any {
	if into, ok := fields[key]; ok {
		return into
	}
	for name, into := range fields {
		if strings.EqualFold(name, key) {
			return into
		}
	}
	return nil
}

// keyed puts key in front of a type error's field path, as encoding/json
// reports a struct field's.
func keyed(key string, err error) error {
	if te, ok := err.(*json.UnmarshalTypeError); ok {
		field := key
		if te.Field != "" {
			field += "." + te.Field
		}
		return &json.UnmarshalTypeError{Value: te.Value, Type: te.Type, Offset: te.Offset, Struct: te.Struct, Field: field}
	}
	return fmt.Errorf("%s: %w", key, err)
}

// Object writes one JSON object, a key at a time, as json.Marshal writes a
// struct: no spaces, strings escaped as encoding/json escapes them.
type Object struct{ b []byte }

// String writes key: v; omitEmpty skips an empty v (the tag's omitempty).
func (o *Object) String(key, v string, omitEmpty bool) {
	if omitEmpty && v == "" {
		return
	}
	o.key(key)
	if plain(v) {
		o.b = append(append(append(o.b, '"'), v...), '"')
		return
	}
	q, _ := json.Marshal(v) // a string always encodes
	o.b = append(o.b, q...)
}

// plain: v is printable ASCII that encoding/json writes as it is (no
// quote, backslash, nor the HTML characters it escapes).
func plain(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// Int writes key: v; omitEmpty skips zero.
func (o *Object) Int(key string, v int, omitEmpty bool) {
	if omitEmpty && v == 0 {
		return
	}
	o.key(key)
	o.b = strconv.AppendInt(o.b, int64(v), 10)
}

// Text writes key: v's text as a string (a netip.Addr, a netip.Prefix);
// omit skips it (the tag's omitzero on a zero value).
func (o *Object) Text(key string, v interface{ MarshalText() ([]byte, error) }, omit bool) error {
	if omit {
		return nil
	}
	text, err := v.MarshalText()
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	o.String(key, string(text), false)
	return nil
}

// Time writes key: t as time.Time's MarshalJSON does.
func (o *Object) Time(key string, t time.Time) error {
	q, err := t.MarshalJSON()
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	o.key(key)
	o.b = append(o.b, q...)
	return nil
}

// Bytes ends the object and returns it.
func (o *Object) Bytes() []byte {
	if len(o.b) == 0 {
		return []byte("{}")
	}
	return append(o.b, '}')
}

func (o *Object) key(k string) {
	if len(o.b) == 0 {
		o.b = append(o.b, '{')
	} else {
		o.b = append(o.b, ',')
	}
	o.b = append(strconv.AppendQuote(o.b, k), ':')
}

// unquote is the JSON string raw (quotes included) as Go text.
func unquote(raw []byte) (string, error) {
	if s, ok := plainString(raw); ok {
		return s, nil
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err
}
