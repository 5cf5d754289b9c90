package jsonfields

import (
	"errors"
)

var (
	errNotObject = errors.New("not a JSON object")
	errSyntax    = errors.New("malformed JSON")
)

// eachField calls fn with each key of the JSON object data and the raw text
// of its value, in order, checking the syntax as it goes: one pass over the
// bytes, where json.Unmarshal into a map of raw values makes three (check,
// scan, copy). null is an object with no keys.
func eachField(data []byte, fn func(key string, raw []byte) error) error {
	i := skipSpace(data, 0)
	if rest := trimSpace(data[i:]); string(rest) == "null" {
		return nil
	}
	if i >= len(data) || data[i] != '{' {
		return errNotObject
	}
	end, err := members(data, i, func(key, raw []byte) error {
		k, err := unquote(key)
		if err != nil {
			return err
		}
		return fn(k, raw)
	})
	if err != nil {
		return err
	}
	if skipSpace(data, end) != len(data) {
		return errSyntax
	}
	return nil
}

// members walks the object or array that opens at data[i], checking every
// value in it and calling fn (if any) with each object member's quoted key
// and raw value; it returns where the object or array ends.
func members(data []byte, i int, fn func(key, raw []byte) error) (int, error) {
	object, closing := data[i] == '{', byte(']')
	if object {
		closing = '}'
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == closing {
		return i + 1, nil
	}
	for {
		var key []byte
		if object {
			if i >= len(data) || data[i] != '"' {
				return 0, errSyntax
			}
			end, err := skipString(data, i)
			if err != nil {
				return 0, err
			}
			key = data[i:end]
			if i = skipSpace(data, end); i >= len(data) || data[i] != ':' {
				return 0, errSyntax
			}
			i = skipSpace(data, i+1)
		}
		end, err := skipValue(data, i)
		if err != nil {
			return 0, err
		}
		if object && fn != nil {
			if err := fn(key, data[i:end]); err != nil {
				return 0, err
			}
		}
		switch i = skipSpace(data, end); {
		case i < len(data) && data[i] == ',':
			i = skipSpace(data, i+1)
		case i < len(data) && data[i] == closing:
			return i + 1, nil
		default:
			return 0, errSyntax
		}
	}
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(data []byte, i int) int {
	for i < len(data) && isSpace(data[i]) {
		i++
	}
	return i
}

// skipValue returns where the JSON value at data[i] ends, checking it.
func skipValue(data []byte, i int) (int, error) {
	if i >= len(data) {
		return 0, errSyntax
	}
	switch c := data[i]; {
	case c == '"':
		return skipString(data, i)
	case c == '{' || c == '[':
		return members(data, i, nil)
	}
	end := i
	for end < len(data) && !isDelim(data[end]) {
		end++
	}
	switch lit := string(data[i:end]); {
	case lit == "true" || lit == "false" || lit == "null":
		return end, nil
	case isNumber(lit):
		return end, nil
	}
	return 0, errSyntax
}

func isDelim(c byte) bool {
	return c == ',' || c == '}' || c == ']' || c == ':' || isSpace(c)
}

// isNumber: s is a JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func isNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		i = digits(s, i)
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		if j := digits(s, i+1); j > i+1 {
			i = j
		} else {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if j := digits(s, i); j > i {
			i = j
		} else {
			return false
		}
	}
	return i == len(s)
}

func digits(s string, i int) int {
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

// skipString returns where the string starting at data[i] ends, checking
// its escapes and that it holds no control character.
func skipString(data []byte, i int) (int, error) {
	for i++; i < len(data); i++ {
		switch c := data[i]; {
		case c == '"':
			return i + 1, nil
		case c < 0x20:
			return 0, errSyntax
		case c == '\\':
			if i+1 >= len(data) {
				return 0, errSyntax
			}
			i++
			switch data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(data) || !isHex4(data[i+1:i+5]) {
					return 0, errSyntax
				}
				i += 4
			default:
				return 0, errSyntax
			}
		}
	}
	return 0, errSyntax
}

func isHex4(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}
